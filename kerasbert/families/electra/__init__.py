"""The electra family."""
