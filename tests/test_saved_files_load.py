"""`.keras` files saved by main on 2026-11-26 (before the option objects: `MaskingConfig`, `FineTuningConfig`, ...)
load with today's code, keep their settings and give the outputs they gave then (tests/fixtures/make_saved_models.py
wrote them and `outputs.json`)."""

import json
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import pytest

from kerasbert.data.masking_config import MaskingConfig

FOLDER = Path(__file__).parent / "fixtures" / "saved_2026_11_26"
RECORD = json.loads((FOLDER / "outputs.json").read_text())


def assert_same(got, expected, where):
    if isinstance(expected, dict):
        assert sorted(got) == sorted(expected), where
        for key in expected:
            assert_same(got[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list) and expected and not isinstance(expected[0], (int, float)):
        assert len(got) == len(expected), where
        for i, (a, b) in enumerate(zip(got, expected)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(expected, (list, int, float)) and not isinstance(expected, bool):
        np.testing.assert_allclose(np.asarray(got, float), np.asarray(expected, float), atol=1e-5, err_msg=where)
    else:
        assert got == expected, where


def outputs_of(model, inputs):
    if inputs is None or "token_ids" in inputs:
        inputs = {name: np.asarray(value) for name, value in (inputs or {}).items()} or None
        inputs = inputs or {"token_ids": np.array([[2, 9, 4, 3]]), "segment_ids": np.zeros((1, 4), "int32"),
                            "padding_mask": np.ones((1, 4), "int32"), "mask_positions": np.array([[2]])}
        outputs = model.predict(inputs, verbose=0)
        outputs = outputs if isinstance(outputs, dict) else {"outputs": outputs}
        return {name: np.asarray(value).tolist() for name, value in outputs.items()}
    return json.loads(model.predict(pd.DataFrame(inputs), verbose=0).to_json(orient="records", double_precision=15))


@pytest.mark.parametrize("name", sorted(RECORD))
def test_a_file_saved_before_loads_and_predicts_as_then(name):
    model = keras.saving.load_model(FOLDER / f"{name}.keras")
    assert_same(outputs_of(model, RECORD[name]["inputs"]), RECORD[name]["outputs"], name)


def test_the_old_separate_masking_options_become_the_masking_config():
    pretrainer = keras.saving.load_model(FOLDER / "pretrainer.keras")
    assert pretrainer.masking == MaskingConfig(selection_rate=0.2, mask_token_rate=0.7, random_token_rate=0.2,
                                               max_selections=5, strategy="whole_word", dynamic=False)
    assert pretrainer.next_sentence == "sop" and pretrainer.text_column == "body"
