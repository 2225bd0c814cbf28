"""Metrics, each defined once, as fractions (a percentage only where printed)."""
