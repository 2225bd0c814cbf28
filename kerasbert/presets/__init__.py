"""kerasbert.presets."""
