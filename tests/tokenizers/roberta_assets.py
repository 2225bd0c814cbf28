"""A real byte-level BPE tokenizer folder for the RoBERTa tests, trained at test time (no downloads).

HF `tokenizers`' `ByteLevelBPETokenizer` (RoBERTa's and GPT-2's recipe: all 256 byte characters, merges
learnt on the text) is trained on the shipped Jane Austen novels and saved as `vocab.json` +
`merges.txt`, the two files of a RoBERTa checkpoint's tokenizer. The reference is HF transformers'
`RobertaTokenizerFast` on that folder, with `<mask>` taking the whitespace before it (`lstrip`) as
in RoBERTa's own `tokenizer.json`.

Import it by path (the tests are no package): `load_helper("roberta_assets")` in the test file.
"""

import json
import pathlib

import pytest

SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # ids 0..4, as RoBERTa's <s>, <pad>, </s>
VOCABULARY_SIZE = 3000


def train_roberta_folder(folder):
    """Trains the byte-level BPE on Jane Austen (train split) and saves vocab.json + merges.txt there."""
    tokenizers = pytest.importorskip("tokenizers", reason="training the test BPE needs HF tokenizers")
    from kerasbert.data.shipped import load_dataset

    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        load_dataset("jane_austen", "train")["text"].tolist(),
        vocab_size=VOCABULARY_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
    )
    bpe.save_model(str(folder))
    return folder


def make_hf_roberta(folder, mask_token_lstrip=True, **kwargs):
    """HF `RobertaTokenizerFast` on a folder of vocab.json + merges.txt; checked to use its vocabulary."""
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    from tokenizers import AddedToken

    mask = AddedToken("<mask>", lstrip=mask_token_lstrip, rstrip=False, normalized=False, special=True)
    reference = transformers.RobertaTokenizerFast.from_pretrained(str(folder), mask_token=mask, **kwargs)
    vocabulary = json.loads((pathlib.Path(folder) / "vocab.json").read_text(encoding="utf-8"))
    assert len(reference) == len(vocabulary) and reference.mask_token_id == vocabulary["<mask>"]
    return reference


@pytest.fixture(scope="session")
def roberta_folder(tmp_path_factory):
    """The folder holding the trained `vocab.json` and `merges.txt`."""
    return train_roberta_folder(tmp_path_factory.mktemp("roberta_tokenizer"))
