"""Numerical parity with HF transformers (CPU torch) on the real all-MiniLM-L6-v2 weights.

Reference: `transformers.BertModel` loaded from the same folder. Bar: max |difference|
<= 1e-4 on sequence_output at real (non-padding) positions and on pooled_output.
"""

import numpy as np
import pytest

from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.presets.loading import load_checkpoint

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-4


def encode(minilm_path, texts, max_length=128):
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(minilm_path))
    return tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="np")


def hf_outputs(model_path, encoded):
    model = transformers.BertModel.from_pretrained(str(model_path)).eval()
    with torch.no_grad():
        out = model(**{k: torch.tensor(v) for k, v in encoded.items()})
    return out.last_hidden_state.numpy(), out.pooler_output.numpy()


def kerasbert_outputs(backbone, encoded):
    out = backbone.predict(
        {
            "token_ids": encoded["input_ids"].astype("int32"),
            "segment_ids": encoded["token_type_ids"].astype("int32"),
            "padding_mask": encoded["attention_mask"].astype("int32"),
        },
        batch_size=8, verbose=0,
    )
    return out["sequence_output"], out["pooled_output"]


def max_differences(ours, reference, mask):
    mask = mask.astype(bool)
    return (
        float(np.abs(ours[0][mask] - reference[0][mask]).max()),
        float(np.abs(ours[1] - reference[1]).max()),
    )


@pytest.fixture(scope="module")
def encoded(minilm_path, real_sentences):
    assert len(real_sentences) >= 32
    return encode(minilm_path, real_sentences)


@pytest.fixture(scope="module")
def reference(minilm_path, encoded):
    return hf_outputs(minilm_path, encoded)


def test_minilm_matches_transformers(minilm_path, encoded, reference):
    lengths = encoded["attention_mask"].sum(1)
    assert lengths.min() < 20 and lengths.max() == 128  # varied lengths, real padding
    backbone = BertBackbone.from_preset(str(minilm_path))
    sequence_diff, pooled_diff = max_differences(
        kerasbert_outputs(backbone, encoded), reference, encoded["attention_mask"]
    )
    print(f"MiniLM vs transformers: sequence {sequence_diff:.2e}, pooled {pooled_diff:.2e}")
    assert sequence_diff <= TOLERANCE and pooled_diff <= TOLERANCE


def test_builtin_name_resolves_to_the_installed_package(minilm_path, encoded, reference):
    backbone = BertBackbone.from_preset("all_minilm_l6_v2_en")
    ours = kerasbert_outputs(backbone, encoded)
    assert max(max_differences(ours, reference, encoded["attention_mask"])) <= TOLERANCE


def test_google_checkpoint_of_the_same_weights_loads_identically(minilm_path, encoded, reference, tmp_path):
    from kerasbert.presets.google_format import write_google_folder

    checkpoint = load_checkpoint(str(minilm_path))
    vocabulary = checkpoint.require_vocabulary().read_text(encoding="utf-8").splitlines()
    folder = write_google_folder(tmp_path / "google", checkpoint.backbone_config,
                                 checkpoint.state_dict, vocabulary)
    import tensorflow as tf

    names = {name for name, _ in tf.train.list_variables(str(folder / "bert_model.ckpt"))}
    assert "bert/encoder/layer_5/attention/self/query/kernel" in names
    assert "bert/embeddings/word_embeddings" in names and "bert/pooler/dense/kernel" in names

    backbone = BertBackbone.from_preset(str(folder))
    sequence_diff, pooled_diff = max_differences(
        kerasbert_outputs(backbone, encoded), reference, encoded["attention_mask"]
    )
    print(f"Google-format copy vs transformers: sequence {sequence_diff:.2e}, pooled {pooled_diff:.2e}")
    assert sequence_diff <= TOLERANCE and pooled_diff <= TOLERANCE


def test_export_to_hf_then_transformers_load(minilm_path, encoded, reference, tmp_path):
    from kerasbert.families.bert.bert_tokenizer import BertTokenizer

    backbone = BertBackbone.from_preset(str(minilm_path))
    tokenizer = BertTokenizer.from_preset(str(minilm_path))
    folder = backbone.export_to_hf(tmp_path / "exported", tokenizer=tokenizer)
    exported = hf_outputs(folder, encoded)
    sequence_diff, pooled_diff = max_differences(exported, reference, encoded["attention_mask"])
    print(f"exported then transformers vs original: sequence {sequence_diff:.2e}, pooled {pooled_diff:.2e}")
    assert sequence_diff <= 1e-6 and pooled_diff <= 1e-6
    hf_tokenizer = transformers.BertTokenizerFast.from_pretrained(str(folder))
    assert hf_tokenizer("Hello, World!")["input_ids"] == [101, 7592, 1010, 2088, 999, 102]
