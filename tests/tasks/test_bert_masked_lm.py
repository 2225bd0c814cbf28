"""BertMaskedLM (fill-mask) against HF transformers, and its output frame, presets and errors.

Reference: `transformers.pipeline("fill-mask")` on `BertForMaskedLM.from_pretrained` of a tiny random
`BertForPreTraining` saved with the real uncased WordPiece vocabulary (CPU torch).
"""

import shutil
import warnings
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import pytest

from kerasbert.tasks.bert_masked_lm import BertMaskedLM

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TEXTS = [
    "Mr. Darcy was a [MASK] man.",
    "It is a truth universally [MASK], that a single man in possession of a good [MASK] must be in "
    "want of a wife.",
    "[MASK] Bennet had five daughters.",
]


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory, minilm_path):
    """A random tiny BertForPreTraining with non-trivial weights, saved with the real vocabulary."""
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64,
    )
    model = transformers.BertForPreTraining(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
        # Unit-scale embeddings make the tied decoder's logits spread (std ~6), so the top
        # probabilities are large (not ~1/30522) and a 1e-5 tolerance on them means something.
        model.bert.embeddings.word_embeddings.weight.normal_(0.0, 1.0)
    folder = tmp_path_factory.mktemp("hf_bert_pretraining")
    model.save_pretrained(folder)
    shutil.copy(Path(minilm_path) / "vocab.txt", folder / "vocab.txt")
    return folder


@pytest.fixture(scope="module")
def fill_mask(hf_folder):
    return BertMaskedLM.from_preset(str(hf_folder))


def test_fill_mask_matches_the_transformers_pipeline(hf_folder, fill_mask):
    tokenizer = transformers.BertTokenizerFast(str(hf_folder / "vocab.txt"))
    reference = transformers.pipeline(
        "fill-mask", model=transformers.BertForMaskedLM.from_pretrained(str(hf_folder)).eval(),
        tokenizer=tokenizer, top_k=5, device="cpu",
    )
    ours = fill_mask.predict(TEXTS, top_k=5, verbose=0)
    expected_rows = []
    for text in TEXTS:
        found = reference(text)
        expected_rows += found if isinstance(found[0], list) else [found]
    assert len(ours) == len(expected_rows) == 4
    ours_scores = np.array(ours["scores"].tolist())
    expected_scores = np.array([[candidate["score"] for candidate in row] for row in expected_rows])
    assert ours["token_ids"].tolist() == [[candidate["token"] for candidate in row] for row in expected_rows]
    difference = np.abs(ours_scores - expected_scores).max()
    print(f"fill-mask vs transformers pipeline: same top-5 ids; top probabilities "
          f"{expected_scores[:, 0].round(3).tolist()}, largest difference {difference:.1e}")
    assert expected_scores[:, 0].min() > 0.05 and difference <= 1e-5


def test_output_frame_has_one_row_per_mask(fill_mask):
    frame = pd.DataFrame({"text": TEXTS}, index=["darcy", "truth", "bennet"])
    predictions = fill_mask.predict(frame, top_k=3, verbose=0)
    assert list(predictions.columns) == ["text", "mask_index", "tokens", "token_ids", "scores"]
    assert list(predictions.index) == ["darcy", "truth", "truth", "bennet"]
    assert predictions["mask_index"].tolist() == [0, 0, 1, 0]
    vocabulary = fill_mask.tokenizer.get_vocabulary()
    for _, row in predictions.iterrows():
        assert row["tokens"] == [vocabulary[i] for i in row["token_ids"]] and len(row["tokens"]) == 3
        assert row["scores"] == sorted(row["scores"], reverse=True) and 0 < sum(row["scores"]) <= 1


def test_bad_input_is_reported_before_computation(fill_mask):
    with pytest.raises(ValueError, match=r"Row 1 has no \[MASK\] token.*Write \[MASK\]"):
        fill_mask.predict(["A [MASK] day.", "No mask here."], verbose=0)
    with pytest.raises(ValueError, match="No texts were given"):
        fill_mask.predict([], verbose=0)
    with pytest.raises(ValueError, match="top_k must be an int"):
        fill_mask.predict(TEXTS, top_k=0, verbose=0)
    with pytest.raises(TypeError, match="predict takes texts.*got int"):
        fill_mask.predict(42, verbose=0)
    with pytest.raises(ValueError, match="use BertPretrainer"):
        fill_mask.fit(["A [MASK] day."], verbose=0)
    short = BertMaskedLM(fill_mask.backbone, fill_mask.preprocessor.__class__(
        fill_mask.tokenizer, sequence_length=8, pad_to_sequence_length=False))
    with pytest.raises(ValueError, match="only 0 fit in sequence_length=8"):
        short.predict(["one two three four five six seven eight [MASK]"], verbose=0)


def test_export_to_hf_restores_the_transformers_weights(hf_folder, fill_mask, tmp_path):
    exported = fill_mask.export_to_hf(tmp_path / "exported")
    reloaded = transformers.BertForMaskedLM.from_pretrained(str(exported)).eval()
    original = transformers.BertForMaskedLM.from_pretrained(str(hf_folder)).eval()
    reference = dict(original.state_dict())
    for name, value in reloaded.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), reference[name].numpy(), err_msg=name)


def test_preset_and_keras_file_round_trips(fill_mask, tmp_path):
    expected = fill_mask.predict(TEXTS, verbose=0)
    fill_mask.save_to_preset(tmp_path / "preset")
    from_preset = BertMaskedLM.from_preset(str(tmp_path / "preset")).predict(TEXTS, verbose=0)
    fill_mask.save(tmp_path / "fill.keras")
    from_file = keras.saving.load_model(tmp_path / "fill.keras").predict(TEXTS, verbose=0)
    for reloaded in (from_preset, from_file):
        assert reloaded["token_ids"].tolist() == expected["token_ids"].tolist()
        np.testing.assert_allclose(np.stack(reloaded["scores"]), np.stack(expected["scores"]), atol=1e-6)


def test_checkpoint_without_a_masked_lm_head_warns():
    with pytest.warns(UserWarning, match=r"has no masked-LM head \(cls\.predictions\.\*\)"):
        BertMaskedLM.from_preset("all_minilm_l6_v2_en")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fresh model from a config alone is untrained by design
        BertMaskedLM.from_preset("bert_mini_en_uncased", load_weights=False)
