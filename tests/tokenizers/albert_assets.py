"""An ALBERT `spiece.model` trained at test time, and HF's ALBERT tokenizer on it as the reference.

ALBERT's own model was trained (google-research/albert README) with
`spm_train --model_type=unigram --vocab_size=30000 --pad_id=0 --unk_id=1 --bos_id=-1 --eos_id=-1
--control_symbols=[CLS],[SEP],[MASK] --user_defined_symbols="(,),\\",-,.,–,£,€"
--character_coverage=0.99995` on lower-cased text. `train_spiece` uses the same settings with 3,000
pieces, on the shipped Jane Austen training paragraphs (lower-cased), so the model has ALBERT's
layout: `<pad>` 0, `<unk>` 1, `[CLS]` 2, `[SEP]` 3, `[MASK]` 4, then the user-defined pieces.

Example:
>>> folder = train_spiece(tmp_path)  # doctest: +SKIP
>>> hf_albert_tokenizer(folder)("Hello world", add_special_tokens=False)["input_ids"]  # doctest: +SKIP
"""

import io
import json
import pathlib

import pytest

ALBERT_CONTROL_SYMBOLS = ["[CLS]", "[SEP]", "[MASK]"]
ALBERT_USER_DEFINED_SYMBOLS = ["(", ")", '"', "-", ".", "–", "£", "€"]


def train_spiece(folder, vocab_size=3000):
    """Trains the unigram model on Jane Austen and writes `folder/spiece.model`; returns `folder`."""
    sentencepiece = pytest.importorskip("sentencepiece", reason="training the model needs sentencepiece")
    from kerasbert.data.shipped import load_dataset

    texts = load_dataset("jane_austen", "train")["text"].str.lower().tolist()
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=model,
        model_type="unigram",
        vocab_size=vocab_size,
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        control_symbols=ALBERT_CONTROL_SYMBOLS,
        user_defined_symbols=ALBERT_USER_DEFINED_SYMBOLS,
        character_coverage=0.99995,
        num_threads=2,
        minloglevel=2,
    )
    folder = pathlib.Path(folder)
    (folder / "spiece.model").write_bytes(model.getvalue())
    return folder


def hf_albert_tokenizer(folder, **kwargs):
    """HF transformers' `AlbertTokenizerFast` on `folder/spiece.model` (kwargs: `do_lower_case`,
    `keep_accents`), checked to really use that model."""
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    reference = transformers.AlbertTokenizerFast.from_pretrained(str(folder), **kwargs)
    assert reference.convert_tokens_to_ids(["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]) == [0, 1, 2, 3, 4]
    assert len(reference) > 1000
    return reference


def hf_albert_tokenizer_transformers4(folder, **kwargs):
    """HF's ALBERT tokenizer as it loads a checkpoint folder holding a `tokenizer.json` written by
    transformers 4, as the published ALBERT checkpoints do: HF's `AlbertConverter` output (pieces
    ending in a digit and a comma lose 100) whose added tokens are only the special tokens, with
    `[MASK]` stripping the whitespace on its left (transformers 4's `AlbertTokenizerFast` default).
    The folder gets a `transformers4/` copy with both files."""
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    from transformers.convert_slow_tokenizer import AlbertConverter

    target = pathlib.Path(folder) / "transformers4"
    target.mkdir(exist_ok=True)
    (target / "spiece.model").write_bytes((pathlib.Path(folder) / "spiece.model").read_bytes())
    current = hf_albert_tokenizer(folder, **kwargs)

    class SlowTokenizer:  # what the converter reads of transformers 4's slow AlbertTokenizer
        vocab_file = str(target / "spiece.model")
        do_lower_case = current.do_lower_case
        keep_accents = current.keep_accents
        convert_tokens_to_ids = staticmethod(current.convert_tokens_to_ids)

    converted = json.loads(AlbertConverter(SlowTokenizer()).converted().to_str())
    specials = {"<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"}
    added = {token["id"]: token for token in converted["added_tokens"] if token["content"] in specials}
    added[1] = {**added[0], "id": 1, "content": "<unk>"}  # the unknown piece is no control piece
    added[4]["lstrip"] = True
    converted["added_tokens"] = [added[token_id] for token_id in sorted(added)]
    (target / "tokenizer.json").write_text(json.dumps(converted), encoding="utf-8")
    reference = transformers.AlbertTokenizerFast.from_pretrained(str(target), **kwargs)
    assert reference.added_tokens_decoder[4].lstrip and "(" not in reference.get_added_vocab()
    return reference
