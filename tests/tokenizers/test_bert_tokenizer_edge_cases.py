"""BertTokenizer on the strings where BERT tokenizers usually disagree, against HF's fast tokenizer.

Reference: HF transformers `BertTokenizerFast` on the all-MiniLM-L6-v2 vocabulary.
"""

import pytest

from kerasbert.families.bert.bert_tokenizer import BertTokenizer

EDGE_CASES = [
    # accents
    "café",
    "naïve",
    "Ångström",
    "résumé Zürich São Paulo Dvořák",
    "e\u0301 decomposed e + combining acute",
    # CJK, kana, Korean
    "中文字符",
    "日本語のテキスト、カタカナ。",
    "한국어 텍스트",
    "mixed中文and English",
    "\U00020000\U0002b820 rare ideographs",
    # emoji
    "🥰😀👍🏽 emoji 👨‍👩‍👧",
    "flag 🇬🇧",
    # control and invisible characters
    "nul\x00here",
    "zero\u200bwidth",
    "soft\u00adhyphen",
    "\ufeffbom at start",
    "bell\x07char",
    "rtl\u202emark",
    "\ufffdreplacement",
    "private\ue000use",
    "vertical\x0btab form\x0cfeed next\x85line",
    # whitespace
    "ideographic\u3000space",
    "no\xa0break",
    "tab\tnewline\ncarriage\rreturn",
    "",
    "   ",
    "\t\n\r ",
    # casing and letters
    "Straße ß ẞ",
    "ﬁnancial ﬂow ﬃ",
    "ΣΑΣ σας Σ",
    "İstanbul DİYARBAKIR ı",
    "ǅungla ǈ ǋ",
    "Ⅻ ① ℃ ™",
    # WordPiece limits
    "a" * 100,
    "a" * 101,
    "pneumonoultramicroscopicsilicovolcanoconiosis" * 3,
    "xqzjvkwy qqqqzzzz",
    "İ" * 60,  # 120 characters once lower-cased without stripping accents
    "e\u0301" * 60,  # 60 characters once accents are stripped
    # special tokens in the text
    "The capital of France is [MASK].",
    "[mask] is not [MASK]",
    "[CLS] a [SEP] b [SEP]",
    "[PAD][UNK][MASK]",
    "x[MASK]y",
    "[ MASK ]",
    "[MASK[MASK]]",
    "[[MASK]",
    "[MASKED]",
    "中[MASK]文",
    "é[MASK]\u0301x",
    "[MASK]\u200b[SEP]\x00[CLS]",
    "İ[MASK]ß",
    # punctuation, numbers, web text
    "Wait... what?!?! --- (yes) [no] {maybe} <tag>",
    "1,000,000.50 $3.14 -42 10%",
    "it's don't we'll",
    "https://example.com/path?q=a&b=c#frag",
    "#hashtag @user e-mail@example.org",
    "«quotes» „low“ ‘single’ — dash…",
    "\u00bfQu\u00e9? \u00a1S\u00ed!",
    "C++ C# F#",
    "a\u2019b \u2018c\u2019",
]


@pytest.mark.parametrize(
    "settings",
    [{"lowercase": True}, {"lowercase": False}, {"lowercase": True, "strip_accents": False}],
    ids=["uncased", "cased", "lowercase_keep_accents"],
)
def test_edge_cases_equal_hf(settings, vocab_file, hf_tokenizer_factory):
    ours = BertTokenizer(vocab_file, **settings)
    hf_settings = {"do_lower_case": settings["lowercase"]}
    hf_settings.update({k: v for k, v in settings.items() if k == "strip_accents"})
    reference = hf_tokenizer_factory(**hf_settings)(
        EDGE_CASES, add_special_tokens=False, return_offsets_mapping=True
    )
    ids, starts, ends = ours.tokenize_with_offsets(EDGE_CASES)
    for text, our_ids, our_starts, our_ends, hf_ids, hf_offsets in zip(
        EDGE_CASES,
        ids.to_list(),
        starts.to_list(),
        ends.to_list(),
        reference["input_ids"],
        reference["offset_mapping"],
    ):
        assert our_ids == hf_ids, text
        assert list(zip(our_starts, our_ends)) == [tuple(o) for o in hf_offsets], text


def test_special_tokens_written_in_text(tokenizer):
    ids = tokenizer(["The capital of France is [MASK].", "[mask]", "x[MASK]y"]).to_list()
    assert tokenizer.mask_token_id in ids[0]
    assert ids[1] == [tokenizer.token_to_id(t) for t in ["[", "mask", "]"]]
    assert ids[2][1] == tokenizer.mask_token_id and len(ids[2]) == 3


def test_split_special_tokens_equals_hf(vocab_file, hf_tokenizer_factory):
    texts = ["fill [MASK] here", "[CLS] a [SEP]"]
    ours = BertTokenizer(vocab_file, split_special_tokens=True)
    reference = hf_tokenizer_factory(do_lower_case=True, split_special_tokens=True)
    assert ours(texts).to_list() == reference(texts, add_special_tokens=False)["input_ids"]
    assert ours.mask_token_id not in ours(texts).to_list()[0]


def test_words_beyond_max_chars_are_unknown(tokenizer):
    ids, starts, ends = tokenizer.tokenize_with_offsets("ok " + "a" * 101)
    assert ids.numpy().tolist()[1] == tokenizer.unk_token_id
    assert (starts.numpy()[1], ends.numpy()[1]) == (3, 104)
    assert len(tokenizer("a" * 100).numpy()) > 1  # 100 characters are still cut into pieces


def test_empty_and_blank_texts_give_no_tokens(tokenizer):
    assert tokenizer(["", "   ", "\x00\u200b"]).to_list() == [[], [], []]


def test_special_tokens_outlive_a_short_max_chars_per_word(vocab_file, minilm_path):
    """HF matches special tokens before WordPiece, so its word-length limit never makes `[MASK]` unknown."""
    tokenizers = pytest.importorskip("tokenizers", reason="the HF reference needs tokenizers")
    reference = tokenizers.Tokenizer.from_file(f"{minilm_path}/tokenizer.json")
    reference.no_truncation()
    reference.no_padding()
    reference.model.max_input_chars_per_word = 5
    texts = ["The café [MASK] opens.", "abcde abcdef [SEP]"]
    ours = BertTokenizer(vocab_file, max_chars_per_word=5)
    ids, starts, ends = ours.tokenize_with_offsets(texts)
    expected = reference.encode_batch(texts, add_special_tokens=False)
    assert ids.to_list() == [encoding.ids for encoding in expected]
    assert [list(zip(*row)) for row in zip(starts.to_list(), ends.to_list())] == [encoding.offsets
                                                                                   for encoding in expected]
