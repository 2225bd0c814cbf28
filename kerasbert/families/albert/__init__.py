"""The albert family."""
