"""Tokenizer fixtures: the real MiniLM vocabulary, our tokenizer, and HF's as the reference.

The reference is HF transformers' `BertTokenizerFast` built from the same `vocab.txt`. Note that
transformers 5 ignores `vocab_file=` (it silently builds a 5-token vocabulary), so the vocabulary
is passed as `vocab=`, read by `tokenizers`' own WordPiece reader.
"""

import functools
import pathlib

import pandas as pd
import pytest

from kerasbert.families.bert.bert_tokenizer import BertTokenizer


def make_hf_tokenizer(vocab_file, **kwargs):
    """HF `BertTokenizerFast` on `vocab_file`, checked to really use that vocabulary."""
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    from tokenizers.models import WordPiece

    vocabulary = WordPiece.read_file(str(vocab_file))
    if int(transformers.__version__.split(".")[0]) >= 5:
        reference = transformers.BertTokenizerFast(vocab=vocabulary, **kwargs)
    else:
        reference = transformers.BertTokenizerFast(vocab_file=str(vocab_file), **kwargs)
    assert reference.convert_tokens_to_ids("[MASK]") == vocabulary["[MASK]"]
    assert len(reference) == len(vocabulary)
    return reference


@pytest.fixture(scope="session")
def hf_tokenizer_factory(vocab_file):
    """`factory(**kwargs)` -> HF BertTokenizerFast on the MiniLM vocabulary."""
    return functools.partial(make_hf_tokenizer, vocab_file)


@pytest.fixture(scope="session")
def vocab_file(minilm_path):
    return pathlib.Path(minilm_path) / "vocab.txt"


@pytest.fixture(scope="session")
def tokenizer(vocab_file):
    """Ours, uncased as all-MiniLM-L6-v2."""
    return BertTokenizer(vocab_file)


@pytest.fixture(scope="session")
def hf_tokenizer(hf_tokenizer_factory):
    """HF's, uncased."""
    return hf_tokenizer_factory(do_lower_case=True)


@functools.lru_cache(maxsize=None)
def corpus_texts(name):
    """Every `text` of a shipped data set, all splits."""
    from kerasbert.data.shipped import load_dataset

    return tuple(pd.concat(load_dataset(name).values()).text.tolist())


@pytest.fixture(scope="session")
def corpus():
    """`corpus(name)` -> all texts of the shipped data set `name` (cached)."""
    return lambda name: list(corpus_texts(name))
