"""kerasbert.tokenizers."""
