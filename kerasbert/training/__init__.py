"""kerasbert.training."""
