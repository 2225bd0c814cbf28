"""XLNetTokenizer and XLNetPacker against HF transformers 5's `XLNetTokenizer` on the same `spiece.model`; the
text -> preprocessor -> XLNetBackbone path against HF's tokenizer -> `XLNetModel`.

Reference: HF `XLNetTokenizer` (Rust `tokenizers`) loading a unigram model trained here with XLNet's settings
(google-research/xlnet: control symbols `<cls>,<sep>,<pad>,<mask>,<eod>`, user-defined `<eop>,.,(,),",-,–,£,€`,
`<unk>` 0, `<s>` 1, `</s>` 2) on 2,000 of the shipped Jane Austen paragraphs, cased, 3,000 pieces.
"""

import keras
import numpy as np
import pytest

from kerasbert.data.shipped import load_dataset
from kerasbert.families.bert_preprocessor import BertPreprocessor
from kerasbert.families.family import tokenizer_from_preset
from kerasbert.families.xlnet.xlnet_backbone import XLNetBackbone
from kerasbert.families.xlnet.xlnet_packer import XLNetPacker
from kerasbert.families.xlnet.xlnet_tokenizer import XLNetTokenizer

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

EDGE_CASES = [
    "", " ", "  leading and trailing  ", "multiple   spaces\tand\nnewlines\r\n",
    "Café Über naïve Ærø e\u0301", "UPPER lower MiXeD", "中文 日本語 한국어 مرحبا", "🥰 emoji 👍🏽",
    "a <mask> b  <mask>", "x<mask>y <mask>", "<eop> <eod> <cls> <sep> <pad> <unk> in text",
    "12,345.67 9, 10, (a) - b. \"q\" ``latex'' '''", "£5 €10 – en dash — em dash", "▁already ▁▁ a▁b",
    "ｆｕｌｌｗｉｄｔｈ ½ ﬁ ß", "<MASK> ＜mask＞",
]


@pytest.fixture(scope="module")
def xlnet_folder(xlnet_spiece, tmp_path_factory):
    """A folder with an XLNet-style `spiece.model` and a tiny XLNet (vocabulary 3,000) saved by HF."""
    folder = tmp_path_factory.mktemp("xlnet_tokenizer")
    (folder / "spiece.model").write_bytes(xlnet_spiece)
    torch.manual_seed(0)
    config = transformers.XLNetConfig(vocab_size=3000, d_model=32, n_head=4, d_inner=64, n_layer=2, mem_len=None)
    transformers.XLNetModel(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def hf_tokenizer(xlnet_folder):
    reference = transformers.XLNetTokenizer.from_pretrained(str(xlnet_folder))
    assert reference.convert_tokens_to_ids(["<unk>", "<cls>", "<sep>", "<pad>", "<mask>"]) == [0, 3, 4, 5, 6]
    return reference


@pytest.fixture(scope="module")
def texts():
    return load_dataset("jane_austen", "test")["text"].tolist()[:40] + EDGE_CASES


def test_ids_and_offsets_equal_hf(xlnet_folder, hf_tokenizer, texts):
    tokenizer = tokenizer_from_preset(str(xlnet_folder))
    assert isinstance(tokenizer, XLNetTokenizer) and tokenizer.do_lower_case is False
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
    differing = []
    for index, text in enumerate(texts):
        expected = hf_tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ours = (ids[index].numpy().tolist(), list(zip(starts[index].numpy().tolist(), ends[index].numpy().tolist())))
        if ours != (expected["input_ids"], [tuple(span) for span in expected["offset_mapping"]]):
            differing.append((text, ours, expected))
    assert not differing, differing[:3]


@pytest.mark.parametrize("sequence_length", [None, 12])
def test_packed_pairs_equal_hf_left_padded_encoding(xlnet_folder, hf_tokenizer, texts, sequence_length):
    firsts, seconds = texts[:8], texts[8:16]
    tokenizer = XLNetTokenizer(xlnet_folder / "spiece.model")
    preprocessor = BertPreprocessor(tokenizer, sequence_length=sequence_length)
    assert isinstance(preprocessor.packer, XLNetPacker)
    padding = {"padding": True} if sequence_length is None else {"padding": "max_length", "truncation": True,
                                                                 "max_length": sequence_length}
    for arguments in ((firsts,), (firsts, seconds)):
        ours = preprocessor(arguments[0] if len(arguments) == 1 else arguments)
        expected = hf_tokenizer(*arguments, return_token_type_ids=True, **padding)
        assert ours["token_ids"].numpy().tolist() == expected["input_ids"]
        assert ours["segment_ids"].numpy().tolist() == expected["token_type_ids"]
        assert ours["padding_mask"].numpy().astype(int).tolist() == expected["attention_mask"]


def test_text_to_backbone_equals_hf_tokenizer_and_model(xlnet_folder, hf_tokenizer):
    pairs = (["It is a truth universally acknowledged.", "Emma Woodhouse, handsome, clever, and rich"],
             ["A single man.", "with a comfortable home and happy disposition"])
    preprocessor = BertPreprocessor(tokenizer_from_preset(str(xlnet_folder)), sequence_length=None)
    inputs = {name: keras.ops.convert_to_numpy(value).astype("int32") for name, value in preprocessor(pairs).items()}
    ours = keras.ops.convert_to_numpy(XLNetBackbone.from_preset(xlnet_folder)(inputs)["sequence_output"])
    encoded = hf_tokenizer(*pairs, padding=True, return_token_type_ids=True, return_tensors="pt")
    model = transformers.XLNetModel.from_pretrained(xlnet_folder).eval()
    with torch.no_grad():
        theirs = model(**encoded).last_hidden_state.numpy()
    assert inputs["padding_mask"][:, 0].tolist() == [0, 1]  # the shorter pair is padded on the left
    difference = float(np.abs(ours - theirs).max())
    print(f"text -> XLNetBackbone vs HF tokenizer -> XLNetModel: max |difference| {difference:.2e}")
    assert difference <= 1e-4


def test_the_config_rebuilds_the_tokenizer(xlnet_folder):
    tokenizer = XLNetTokenizer(xlnet_folder, do_lower_case=True)
    rebuilt = XLNetTokenizer.from_config(tokenizer.get_config())
    rebuilt.set_proto(xlnet_folder / "spiece.model")
    assert rebuilt.do_lower_case is True and rebuilt.special_tokens() == tokenizer.special_tokens()
    assert rebuilt(["Hello World"]).to_list() == tokenizer(["Hello World"]).to_list()
    assert tokenizer.hf_tokenizer_config()["tokenizer_class"] == "XLNetTokenizer"
