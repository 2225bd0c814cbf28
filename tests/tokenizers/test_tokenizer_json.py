"""Every family's tokenizer loads a folder saved by transformers 5 (`tokenizer.json` only, no classic files) and
equals HF's fast tokenizer on that folder, ids and character offsets, on the real-text lists; a `tokenizer.json`
kerasbert cannot reproduce is a named error.

References: HF transformers 5 `AutoTokenizer` on the same folder (see `tokenizer_json_assets.py` for how each
folder is made: BERT from all-MiniLM-L6-v2's real vocabulary; the others trained here on Jane Austen; ModernBERT's
layout over the RoBERTa BPE; DeBERTa-v3's layout of `spm.model`, and that `spm.model` itself).
"""

import importlib.util
import json
import pathlib
import re
import unicodedata

import keras
import numpy as np
import pytest

from kerasbert.data.shipped import load_dataset
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.families.bert_preprocessor import BertPreprocessor
from kerasbert.families.deberta_v2.deberta_v2_tokenizer import DebertaV2Tokenizer
from kerasbert.families.family import tokenizer_from_preset
from kerasbert.families.roberta.roberta_tokenizer import RobertaTokenizer
from kerasbert.tasks.bert_classifier import BertClassifier
from kerasbert.tokenizers.tokenizer_json import TokenizerJsonError, bpe_model, unigram_model, wordpiece_tokens


def load_helper(name):
    """A module beside this file (the tests are no package, and pytest imports them by path)."""
    spec = importlib.util.spec_from_file_location(name, pathlib.Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


assets = load_helper("tokenizer_json_assets")
roberta_assets = load_helper("roberta_assets")
albert_assets = load_helper("albert_assets")
EDGE_CASES = load_helper("test_roberta_tokenizer").EDGE_CASES + load_helper("test_albert_tokenizer").ALBERT_EDGE_CASES
CORPORA = {"austen": ("jane_austen", 300), "uci": ("uci_sentiment", 1000), "brown": ("brown_pos", 930),
           "spam": ("spam_assassin", 40)}  # name: (data set, texts of its test split)


def texts_of(name):
    if name == "edge":
        return EDGE_CASES
    dataset, count = CORPORA[name]
    return load_dataset(dataset, "test")["text"].tolist()[:count]


def differences(tokenizer, reference, texts):
    """`(texts whose ids or offsets differ, tokens compared)`, no special tokens added on either side."""
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
    expected = reference(texts, add_special_tokens=False, return_offsets_mapping=True)
    ours = [list(zip(*row)) for row in zip(ids.to_list(), starts.to_list(), ends.to_list())]
    theirs = [[(i, *span) for i, span in zip(row_ids, spans)]
              for row_ids, spans in zip(expected["input_ids"], expected["offset_mapping"])]
    return [(text, a, b) for text, a, b in zip(texts, ours, theirs) if a != b], sum(map(len, theirs))


@pytest.fixture(scope="module")
def roberta5(tmp_path_factory):
    classic = roberta_assets.train_roberta_folder(tmp_path_factory.mktemp("roberta_classic"))
    return assets.transformers5_folder(classic, tmp_path_factory.mktemp("roberta5"), "RobertaTokenizer", "roberta")


@pytest.fixture(scope="module")
def modernbert5(roberta5, tmp_path_factory):
    return assets.modernbert_layout_folder(roberta5, tmp_path_factory.mktemp("modernbert5"))


@pytest.fixture(scope="module")
def albert_classic(tmp_path_factory):
    return albert_assets.train_spiece(tmp_path_factory.mktemp("albert_classic"))


@pytest.fixture(scope="module")
def albert5(albert_classic, tmp_path_factory):
    return assets.transformers5_folder(albert_classic, tmp_path_factory.mktemp("albert5"), "AlbertTokenizer", "albert")


@pytest.fixture(scope="module")
def xlnet5(tmp_path_factory):
    classic = assets.train_xlnet_spiece(tmp_path_factory.mktemp("xlnet_classic"))
    return assets.transformers5_folder(classic, tmp_path_factory.mktemp("xlnet5"), "XLNetTokenizer", "xlnet")


@pytest.fixture(scope="module")
def deberta_classic(tmp_path_factory):
    folder = assets.train_deberta_spm(tmp_path_factory.mktemp("deberta_classic"))
    assets.write_config(folder, "deberta-v2")
    return folder


@pytest.fixture(scope="module")
def deberta5(deberta_classic, tmp_path_factory):
    target = tmp_path_factory.mktemp("deberta5")
    return assets.transformers5_folder(deberta_classic, target, "DebertaV2Tokenizer", "deberta-v2")


@pytest.fixture(scope="module")
def big_bird_classic(tmp_path_factory):
    folder = assets.train_big_bird_spiece(tmp_path_factory.mktemp("big_bird_classic"))
    assets.write_config(folder, "big_bird")
    return folder


@pytest.fixture(scope="module")
def big_bird5(big_bird_classic, tmp_path_factory):
    target = tmp_path_factory.mktemp("big_bird5")
    return assets.transformers5_folder(big_bird_classic, target, "BigBirdTokenizer", "big_bird")


@pytest.fixture(scope="module")
def bert5(minilm_path, tmp_path_factory):
    """all-MiniLM-L6-v2's real WordPiece tokenizer saved by transformers 5, with its config."""
    target = tmp_path_factory.mktemp("bert5")
    folder = assets.transformers5_folder(minilm_path, target, "BertTokenizer", None)
    (folder / "config.json").write_bytes((pathlib.Path(minilm_path) / "config.json").read_bytes())
    return folder


FOLDERS = {"bert": "bert5", "roberta": "roberta5", "modernbert": "modernbert5", "albert": "albert5", "xlnet": "xlnet5",
           "deberta": "deberta5", "deberta_spm": "deberta_classic", "big_bird": "big_bird5",
           "big_bird_spm": "big_bird_classic"}


@pytest.mark.parametrize("texts", ["austen", "uci", "brown", "spam", "edge"])
@pytest.mark.parametrize("family", list(FOLDERS))
def test_ids_and_offsets_equal_hf(family, texts, request):
    folder = request.getfixturevalue(FOLDERS[family])
    tokenizer = tokenizer_from_preset(str(folder))
    listed = texts_of(texts)
    if family.startswith("deberta"):
        listed = [text for text in listed if not deberta_known_difference(text)]
    if family.startswith("big_bird"):
        listed = [text for text in listed if not re.search(" \u2581", text)]  # a `▁` written after a space
    different, tokens = differences(tokenizer, assets.hf_fast(folder), listed)
    print(f"{family}/{texts}: {len(listed)} texts, {tokens} tokens, {len(different)} differ")
    assert not different, different[0]


@pytest.mark.parametrize("family", ["distilbert", "electra", "mobilebert", "longformer"])
def test_families_sharing_a_tokenizer_read_transformers5_folders(family, request, tmp_path):
    """DistilBERT, ELECTRA and MobileBERT read BERT's WordPiece, Longformer RoBERTa's BPE: a transformers 5 folder
    of each (tokenizer.json, tokenizer_config.json and the family's config.json, no classic file) reads with HF's
    ids and offsets."""
    source = pathlib.Path(request.getfixturevalue("roberta5" if family == "longformer" else "bert5"))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    assets.write_config(tmp_path, family)
    tokenizer = tokenizer_from_preset(str(tmp_path))
    assert tokenizer.families and family in tokenizer.families
    different, tokens = differences(tokenizer, assets.hf_fast(tmp_path), texts_of("uci") + texts_of("edge"))
    print(f"{family}: {tokens} tokens, {len(different)} texts differ")
    assert not different, different[0]


def deberta_known_difference(text):
    """DebertaV2Tokenizer's known differences: a letter and combining marks HF's NFC composes, a `▁` written
    right after whitespace."""
    return any(unicodedata.category(c).startswith("M") for c in text) or re.search(r"\s\u2581", text)


def test_modernbert_layout_settings(modernbert5):
    tokenizer = tokenizer_from_preset(str(modernbert5))
    assert isinstance(tokenizer, RobertaTokenizer) and not tokenizer.trim_offsets and tokenizer.mask_token_lstrip
    assert (tokenizer.cls_token, tokenizer.sep_token, tokenizer.mask_token) == ("[CLS]", "[SEP]", "[MASK]")
    assert tokenizer.cls_token_id == 3001


@pytest.mark.parametrize("folder_name, separators", [("modernbert5", 1), ("roberta5", 2)])
def test_pairs_pack_as_the_template_says(folder_name, separators, request):
    """ModernBERT's template parts a pair with one [SEP], RoBERTa's with </s></s>: the ids equal HF's."""
    folder = request.getfixturevalue(folder_name)
    preprocessor = BertPreprocessor(tokenizer_from_preset(str(folder)), sequence_length=24)
    assert preprocessor.tokenizer.pair_separators == separators
    pairs = [("She had a sister.", "Elizabeth laughed at it"), ("Yes", "no, not at all, never")]
    ours = preprocessor(([a for a, _ in pairs], [b for _, b in pairs]))
    theirs = assets.hf_fast(folder)([a for a, _ in pairs], [b for _, b in pairs])["input_ids"]
    for row, expected in enumerate(theirs):
        real = np.asarray(ours["padding_mask"][row]).astype(bool)
        assert np.asarray(ours["token_ids"][row])[real].tolist() == expected


def test_unsupported_kinds_are_named_errors(roberta5):
    fast = json.loads((roberta5 / "tokenizer.json").read_text(encoding="utf-8"))
    with pytest.raises(TokenizerJsonError, match=r"normaliser NFC, pre-tokenizer ByteLevel\). It reads"):
        bpe_model({**fast, "normalizer": {"type": "NFC"}}, "x/tokenizer.json")
    with pytest.raises(TokenizerJsonError, match=r"model BPE.*It reads normaliser Sequence\[Replace"):
        unigram_model(fast, "x/tokenizer.json")
    wordlevel = {**fast, "model": {"type": "WordLevel", "vocab": {}}}
    with pytest.raises(TokenizerJsonError, match="model WordLevel"):
        bpe_model(wordlevel, "x/tokenizer.json")


def test_wordpiece_with_another_normaliser_is_a_named_error(bert5, roberta5):
    fast = json.loads((bert5 / "tokenizer.json").read_text(encoding="utf-8"))
    assert wordpiece_tokens(fast, "t")[:1] == ["[PAD]"]
    fast["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}]}
    with pytest.raises(TokenizerJsonError, match=r"normaliser Sequence\[NFD, Lowercase\], pre-tokenizer Bert"):
        wordpiece_tokens(fast, "x/tokenizer.json")
    with pytest.raises(TokenizerJsonError, match="WordPiece pipeline .model BPE"):
        BertTokenizer(roberta5 / "tokenizer.json")


def test_deberta_split_by_punct_is_a_named_error(deberta5, tmp_path):
    fast = json.loads((deberta5 / "tokenizer.json").read_text(encoding="utf-8"))
    fast["pre_tokenizer"]["pretokenizers"].insert(0, {"type": "Punctuation", "behavior": "Isolated"})
    (tmp_path / "tokenizer.json").write_text(json.dumps(fast), encoding="utf-8")
    with pytest.raises(TokenizerJsonError, match=r"pre-tokenizer Sequence\[Punctuation, Metaspace\]\)\. It reads"):
        DebertaV2Tokenizer(tmp_path / "tokenizer.json")


def test_big_bird_tokenizer_json_of_another_pipeline_is_a_named_error(big_bird_classic, big_bird5, tmp_path):
    """transformers 4's converter wrote the model's Precompiled normaliser: HF reads that file before the
    `spiece.model`, kerasbert cannot reproduce it, and says so."""
    fast = json.loads((big_bird5 / "tokenizer.json").read_text(encoding="utf-8"))
    fast["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Precompiled", "precompiled_charsmap": ""},
                                                              {"type": "Replace", "pattern": {"Regex": " {2,}"},
                                                               "content": " "}]}
    for name in ("spiece.model", "config.json"):
        (tmp_path / name).write_bytes((big_bird_classic / name).read_bytes())
    (tmp_path / "tokenizer.json").write_text(json.dumps(fast), encoding="utf-8")
    with pytest.raises(TokenizerJsonError, match=r"normaliser Sequence\[Precompiled, Replace\].*without the"):
        tokenizer_from_preset(str(tmp_path))


def test_albert_transformers4_tokenizer_json_equals_hf(albert_classic, tmp_path):
    """A published ALBERT checkpoint's `tokenizer.json` (transformers 4: added tokens the special tokens only,
    `[MASK]` with `lstrip`, digit-comma pieces 100 lower) alone in a folder."""
    reference = albert_assets.hf_albert_tokenizer_transformers4(albert_classic)
    (tmp_path / "tokenizer.json").write_bytes((albert_classic / "transformers4" / "tokenizer.json").read_bytes())
    assets.write_config(tmp_path, "albert")
    tokenizer = tokenizer_from_preset(str(tmp_path))
    assert tokenizer.legacy_added_tokens
    texts = texts_of("uci")[:300] + EDGE_CASES
    different, tokens = differences(tokenizer, reference, texts)
    print(f"albert transformers-4 tokenizer.json: {len(texts)} texts, {tokens} tokens, {len(different)} differ")
    assert not different, different[0]


def test_proto_from_tokenizer_json_equals_the_spiece_model(albert_classic, albert5):
    """The ModelProto built from the transformers-5 `tokenizer.json` has the `spiece.model`'s pieces, scores,
    piece kinds the tokenizer relies on, and character map; SentencePiece itself cuts text the same with it."""
    from sentencepiece import SentencePieceProcessor, sentencepiece_model_pb2

    original = (albert_classic / "spiece.model").read_bytes()
    proto, settings = unigram_model(json.loads((albert5 / "tokenizer.json").read_text(encoding="utf-8")), "t")
    assert settings == {"do_lower_case": True, "keep_accents": False}
    ours, theirs = (sentencepiece_model_pb2.ModelProto.FromString(data) for data in (proto, original))
    assert [(p.piece, p.score) for p in ours.pieces] == [(p.piece, p.score) for p in theirs.pieces]
    assert [p.type for p in ours.pieces] == [p.type for p in theirs.pieces]
    assert ours.normalizer_spec.precompiled_charsmap == theirs.normalizer_spec.precompiled_charsmap
    texts = [text.lower() for text in texts_of("uci")[:200]]
    ours, theirs = (SentencePieceProcessor(model_proto=data) for data in (proto, original))
    assert ours.encode(texts) == theirs.encode(texts)


def test_deberta_tokenizer_and_packer_equal_hf_pairs(deberta5):
    tokenizer = tokenizer_from_preset(str(deberta5))
    assert isinstance(tokenizer, DebertaV2Tokenizer) and tokenizer.mask_token_id == 3000
    assert tokenizer.vocabulary_size() == 3001 and not tokenizer.do_lower_case
    reference = assets.hf_fast(deberta5)
    texts = texts_of("uci")[:64]
    packer = tokenizer.packer_class(cls_token_id=tokenizer.cls_token_id, sep_token_id=tokenizer.sep_token_id,
                                    pad_token_id=tokenizer.pad_token_id, sequence_length=24)
    ours = packer((tokenizer(texts[:32]), tokenizer(texts[32:])))
    theirs = reference(texts[:32], texts[32:], truncation=True, max_length=24, padding="max_length",
                       return_token_type_ids=True, return_tensors="np")
    np.testing.assert_array_equal(ours["token_ids"], theirs["input_ids"])
    np.testing.assert_array_equal(ours["segment_ids"], theirs["token_type_ids"])


def test_classifier_from_tokenizer_json_saves_and_takes_raw_strings(deberta5, tmp_path):
    """A DeBERTa-v3 classifier (tiny random backbone) from a transformers-5 folder; its `.keras` reloads with
    the tokenizer built from `tokenizer.json` and gives the same outputs on raw strings."""
    torch = pytest.importorskip("torch", reason="the tiny HF DeBERTa needs torch")
    import transformers

    folder = tmp_path / "deberta"
    folder.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_bytes((deberta5 / name).read_bytes())
    torch.manual_seed(0)
    config = transformers.AutoConfig.from_pretrained(str(deberta5))
    transformers.DebertaV2Model(config).save_pretrained(str(folder))
    classifier = BertClassifier.from_preset(str(folder), num_classes=2, sequence_length=16)
    texts = ["A fine day [MASK].", "Not  so\tgood!"]
    before = np.stack(classifier.predict(texts, verbose=0)["probabilities"])
    classifier.save(tmp_path / "clf.keras")
    restored = keras.saving.load_model(tmp_path / "clf.keras")
    assert isinstance(restored.preprocessor.tokenizer, DebertaV2Tokenizer)
    np.testing.assert_allclose(np.stack(restored.predict(texts, verbose=0)["probabilities"]), before, atol=1e-6)
