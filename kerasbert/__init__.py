"""kerasbert: the BERT toolkit for Keras 3."""

__version__ = "0.1.0"
