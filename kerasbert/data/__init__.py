"""kerasbert.data."""
