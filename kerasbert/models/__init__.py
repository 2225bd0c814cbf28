"""kerasbert.models."""
