"""The bert family."""
