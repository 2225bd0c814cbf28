"""The roberta family."""
