"""Deployment: SavedModel export with raw-string signatures, int8, traced model functions for serving."""
