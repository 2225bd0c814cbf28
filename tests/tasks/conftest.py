"""Fixtures for application tests: a tiny backbone with the real uncased WordPiece tokenizer."""

import pytest

from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.bert_preprocessor import BertPreprocessor


@pytest.fixture(scope="session")
def real_preprocessor():
    return BertPreprocessor.from_preset("all_minilm_l6_v2_en", sequence_length=64,
                                        pad_to_sequence_length=False)


@pytest.fixture
def tiny_backbone():
    return BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=32,
                        intermediate_dim=64, max_sequence_length=128)
