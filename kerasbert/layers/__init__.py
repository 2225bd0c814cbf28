"""kerasbert.layers."""
