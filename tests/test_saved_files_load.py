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
from kerasbert.tasks import LongInputs

FOLDER = Path(__file__).parent / "fixtures" / "saved_2026_11_26"
RECORD = json.loads((FOLDER / "outputs.json").read_text())


def assert_same(got, expected, where):
    if isinstance(expected, dict):
        assert set(expected) <= set(got), where  # every output of then; newer columns (truncated) may join
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


@pytest.mark.parametrize("name, settings", [
    ("classifier", {"columns": {"text": "review", "text_pair": "text_pair", "label": "label"}, "long_inputs": None}),
    ("classifier_windows", {"long_inputs": LongInputs(doc_stride=4, window_pooling="max")}),
    ("token_classifier", {"columns": {"tokens": "words", "tags": "tags", "text": "text"},
                          "long_inputs": LongInputs(doc_stride=4)}),
    ("question_answerer", {"columns": {"question": "question", "context": "passage", "answer_texts": "answer_texts",
                                       "answer_starts": "answer_starts", "id": "id"}, "doc_stride": 4}),
    ("multiple_choice", {"columns": {"context": "context", "question": "question", "endings": "options",
                                     "label": "label"}}),
    ("pretrainer", {"columns": {"text": "body", "units": None}, "next_sentence": "sop",  # units: a role added since
                    "masking": MaskingConfig(selection_rate=0.2, mask_token_rate=0.7, random_token_rate=0.2,
                                             max_selections=5, strategy="whole_word", dynamic=False)}),
    ("text_encoder", {"columns": {"text": "sentence", "anchor": "anchor", "positive": "positive", "negative": "negative",
                                  "text_pair": "text_pair", "score": "score"}, "pooling": "cls"}),  # roles added since
    ("layer_mix", {"fine_tuning": "full", "layer_mix": True}),
    ("lora", {"fine_tuning": "lora", "layer_mix": False}),
])
def test_the_old_separate_options_become_todays(name, settings):
    model = keras.saving.load_model(FOLDER / f"{name}.keras")
    assert {key: getattr(model, key) for key in settings} == settings
