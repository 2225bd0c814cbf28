"""kerasbert.applications."""
