"""Probabilities from logits in numpy, and the threshold rule on them, as every task's decoding and scoring read them.

Examples:
    >>> softmax(np.array([[0.0, 0.0]])).tolist(), sigmoid(np.array([0.0])).tolist()
    ([[0.5, 0.5]], [0.5])
"""

import numpy as np


def softmax(logits):
    """Softmax over the last axis (shifted by the row maximum: no overflow)."""
    shifted = np.exp(logits - logits.max(-1, keepdims=True))
    return shifted / shifted.sum(-1, keepdims=True)


def sigmoid(logits):
    """The logistic function, element by element."""
    return 1.0 / (1.0 + np.exp(-logits))


def above_threshold(scores, threshold=0.5):
    """The one decision rule of multi-label and binary-score decoding: on where the score is strictly above its
    threshold (one number, or one per label).

    Examples:
        >>> above_threshold(np.array([[0.2, 0.5, 0.9]]), [0.5, 0.4, 0.5]).tolist()
        [[False, True, True]]
    """
    return np.asarray(scores) > np.asarray(threshold)
