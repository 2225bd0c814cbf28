"""Folders as transformers 5 saves them (`tokenizer.json` + `tokenizer_config.json` + `config.json`, no classic
tokenizer files), made from the tokenizers trained at test time, and HF's fast tokenizer on each as reference.

- RoBERTa, ALBERT, XLNet: HF's own tokenizer class loads the classic files (`vocab.json` + `merges.txt`,
  `spiece.model`) trained here, `save_pretrained` writes the folder, the classic files are not copied.
- ModernBERT: no real ModernBERT tokenizer is offline; the RoBERTa BPE trained here is written in ModernBERT's
  `tokenizer.json` layout (`[UNK] [CLS] [SEP] [PAD] [MASK]` added after the vocabulary, `[MASK]` taking the
  space on its left, a plain `TemplateProcessing` post-processor: untrimmed offsets; tokenizer class
  `PreTrainedTokenizerFast`, as answerdotai's folders).

Example:
>>> folder = transformers5_folder(classic, tmp_path, "AlbertTokenizer", "albert")  # doctest: +SKIP
"""

import io
import json
import pathlib

import pytest

TINY = {"vocab_size": 3000, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
        "intermediate_size": 32, "max_position_embeddings": 64}
CONFIGS = {
    "roberta": {"model_type": "roberta", **TINY, "max_position_embeddings": 66, "pad_token_id": 1},
    "albert": {"model_type": "albert", **TINY, "embedding_size": 8},
    "xlnet": {"model_type": "xlnet", "vocab_size": 3000, "d_model": 16, "n_layer": 1, "n_head": 2, "d_inner": 32},
    "modernbert": {"model_type": "modernbert", **TINY, "vocab_size": 3005},
    "deberta-v2": {"model_type": "deberta-v2", **TINY, "vocab_size": 3001, "relative_attention": True,
                   "pos_att_type": ["p2c", "c2p"], "position_buckets": 8, "max_relative_positions": 16,
                   "norm_rel_ebd": "layer_norm", "share_att_key": True, "position_biased_input": False,
                   "type_vocab_size": 0},
    "big_bird": {"model_type": "big_bird", **TINY, "block_size": 4, "num_random_blocks": 1},
    # families that read BERT's WordPiece (all-MiniLM-L6-v2's 30,522 tokens here) or RoBERTa's BPE
    "distilbert": {"model_type": "distilbert", "vocab_size": 30522, "dim": 16, "n_layers": 1, "n_heads": 2,
                   "hidden_dim": 32},
    "electra": {"model_type": "electra", **TINY, "vocab_size": 30522, "embedding_size": 8},
    "mobilebert": {"model_type": "mobilebert", **TINY, "vocab_size": 30522, "embedding_size": 8,
                   "intra_bottleneck_size": 8, "true_hidden_size": 8},
    "longformer": {"model_type": "longformer", **TINY, "max_position_embeddings": 66, "pad_token_id": 1,
                   "attention_window": 4},
}
MODERNBERT_SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]


def transformers5_folder(classic, target, tokenizer_class, family):
    """`target` with HF `tokenizer_class` on the `classic` folder saved by `save_pretrained` (tokenizer.json
    only) and a tiny `config.json` of `family` (None: none); checked to hold no classic file."""
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    target = pathlib.Path(target)
    getattr(transformers, tokenizer_class).from_pretrained(str(classic)).save_pretrained(str(target))
    assert sorted(path.name for path in target.iterdir()) == ["tokenizer.json", "tokenizer_config.json"]
    if family is not None:
        write_config(target, family)
    return target


def train_xlnet_spiece(folder):
    """An XLNet-style `spiece.model` in `folder` (as `tests/families/test_xlnet_tokenizer.py` trains it)."""
    sentencepiece = pytest.importorskip("sentencepiece", reason="training the model needs sentencepiece")
    from kerasbert.data.shipped import load_dataset

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(load_dataset("jane_austen", "train")["text"].tolist()[:2000]), model_writer=model,
        model_type="unigram", vocab_size=3000, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        control_symbols=["<cls>", "<sep>", "<pad>", "<mask>", "<eod>"],
        user_defined_symbols=["<eop>", ".", "(", ")", '"', "-", "–", "£", "€"], character_coverage=0.99995,
        num_threads=2, minloglevel=2)
    (pathlib.Path(folder) / "spiece.model").write_bytes(model.getvalue())
    return folder


def train_deberta_spm(folder):
    """A DeBERTa-v3-style `spm.model` in `folder`: `[PAD]` 0, `[CLS]` 1, `[SEP]` 2, `[UNK]` 3, no `[MASK]` (HF
    appends it), cased, 3,000 pieces on 2,000 Jane Austen paragraphs."""
    sentencepiece = pytest.importorskip("sentencepiece", reason="training the model needs sentencepiece")
    from kerasbert.data.shipped import load_dataset

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(load_dataset("jane_austen", "train")["text"].tolist()[:2000]), model_writer=model,
        model_type="unigram", vocab_size=3000, pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]",
        bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]", character_coverage=0.99995, num_threads=2,
        minloglevel=2)
    (pathlib.Path(folder) / "spm.model").write_bytes(model.getvalue())
    return folder


def train_big_bird_spiece(folder):
    """A BigBird-style `spiece.model` in `folder`: `<pad>` 0, `</s>` 1, `<s>` 2, `<unk>` 3, `[CLS]`, `[SEP]`,
    `[MASK]` user-defined pieces, cased, 3,000 pieces on 2,000 Jane Austen paragraphs."""
    sentencepiece = pytest.importorskip("sentencepiece", reason="training the model needs sentencepiece")
    from kerasbert.data.shipped import load_dataset

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(load_dataset("jane_austen", "train")["text"].tolist()[:2000]), model_writer=model,
        model_type="unigram", vocab_size=3000, pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>",
        eos_piece="</s>", bos_piece="<s>", unk_piece="<unk>", user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"],
        character_coverage=0.99995, num_threads=2, minloglevel=2)
    (pathlib.Path(folder) / "spiece.model").write_bytes(model.getvalue())
    return folder


def write_config(target, family):
    """A tiny HF `config.json` of `family` in `target` (all keys, as `save_pretrained` writes them)."""
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    settings = dict(CONFIGS[family])
    transformers.AutoConfig.for_model(settings.pop("model_type"), **settings).save_pretrained(str(target))


def modernbert_layout_folder(roberta5, target):
    """The RoBERTa `tokenizer.json` of `roberta5` rewritten in ModernBERT's layout, in `target`."""
    fast = json.loads((pathlib.Path(roberta5) / "tokenizer.json").read_text(encoding="utf-8"))
    size = len(fast["model"]["vocab"])
    ids = {token: size + index for index, token in enumerate(MODERNBERT_SPECIALS)}
    fast["added_tokens"] += [
        {"id": ids[token], "content": token, "single_word": False, "lstrip": token == "[MASK]", "rstrip": False,
         "normalized": False, "special": True} for token in MODERNBERT_SPECIALS]
    cls, sep = ({"SpecialToken": {"id": token, "type_id": 0}} for token in ("[CLS]", "[SEP]"))
    fast["post_processor"] = {
        "type": "TemplateProcessing", "single": [cls, {"Sequence": {"id": "A", "type_id": 0}}, sep],
        "pair": [cls, {"Sequence": {"id": "A", "type_id": 0}}, sep, {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
        "special_tokens": {token: {"id": token, "ids": [ids[token]], "tokens": [token]} for token in ("[CLS]", "[SEP]")}}
    target = pathlib.Path(target)
    (target / "tokenizer.json").write_text(json.dumps(fast), encoding="utf-8")
    settings = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "cls_token": "[CLS]",
                "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]"}
    (target / "tokenizer_config.json").write_text(json.dumps(settings), encoding="utf-8")
    write_config(target, "modernbert")
    return target


def hf_fast(folder):
    """HF's tokenizer on `folder` (transformers 5 reads its `tokenizer.json`)."""
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    return transformers.AutoTokenizer.from_pretrained(str(folder))
