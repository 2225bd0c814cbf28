"""Deployment: SavedModel export with raw-string signatures, ONNX export and ONNX Runtime, int8, traced model
functions for serving."""
