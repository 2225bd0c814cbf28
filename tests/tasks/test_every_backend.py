"""Every task model on the Keras backend this run uses (CI runs this file under TensorFlow, JAX and torch):
`fit`, `evaluate` and `predict` on real text, and `.keras` files that load and predict identically under
another backend (fresh processes, safe mode).

Tiny backbones with the real all-MiniLM-L6-v2 vocabulary; the data is sized so that every step has one
batch shape (JAX compiles once per shape).
"""

import json
import os
import textwrap
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import pytest

import kerasbert as kb
from kerasbert.data.choice_examples import next_sentence_examples
from kerasbert.data.conll import load_conll
from kerasbert.data.shipped import load_dataset
from kerasbert.data.squad import load_squad

# `make test` runs the classifier and the `.keras` rotation on every backend, export under torch; the other task
# models' tests here (marked on_request; on TensorFlow their own test files cover them) run on request:
# KERAS_BACKEND=jax .venv/bin/python -m pytest tests/tasks/test_every_backend.py

BACKENDS = ("tensorflow", "jax", "torch")
CONLL_TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
SHARED_DATA = Path(os.environ.get("KERASBERT_SHARED_DATA")
                   or Path(__file__).resolve().parents[2].parent / "shared" / "data")


def tiny_backbone(dropout=0.1):
    keras.utils.set_random_seed(0)
    return kb.BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=32,
                           intermediate_dim=64, max_sequence_length=128, dropout=dropout, attention_dropout=dropout)


def shared_file(*parts):
    path = SHARED_DATA.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"{path} is absent (set KERASBERT_SHARED_DATA to the shared data folder)")
    return path


def reviews(count=16):
    train = load_dataset("uci_sentiment", "train")
    short = train[train["text"].str.len() < 60]
    return pd.concat([short[short["label"] == 0].head(count // 2),
                      short[short["label"] == 1].head(count // 2)])[["text", "label"]]


def named(frame):
    return frame.assign(label=frame["label"].map({0: "negative", 1: "positive"}))


@pytest.mark.all_backends
def test_classifier_learns_and_predicts(real_preprocessor):
    data = named(reviews())
    # Dropout off: memorising 16 reviews in 12 steps is then certain on every backend (final loss 0.30-0.36).
    model = kb.BertClassifier(tiny_backbone(dropout=0.0), real_preprocessor, labels=["negative", "positive"],
                              dropout=0.0)
    history = model.fit(data, epochs=12, batch_size=16, learning_rate=1e-2, verbose=0)
    assert history.history["loss"][-1] < 0.45 < 0.69 < history.history["loss"][0]  # memorises 16 reviews
    results = model.evaluate(data, verbose=0)
    assert set(results) == {"loss", "accuracy", "macro_f1", "mcc", "f1"} and results["accuracy"] >= 0.9
    predicted = model.predict(data["text"].tolist(), verbose=0)
    assert set(predicted["label"]) <= {"negative", "positive"} and len(predicted) == len(data)
    np.testing.assert_allclose(np.stack(predicted["probabilities"]).sum(-1), 1.0, atol=1e-5)


@pytest.mark.on_request
def test_token_classifier_tags_words_with_character_spans(real_preprocessor):
    data = load_conll(shared_file("conll2003", "train.txt")).head(16)
    model = kb.BertTokenClassifier(tiny_backbone(), real_preprocessor, labels=CONLL_TAGS)
    model.fit(data, epochs=1, batch_size=16, verbose=0)
    assert {"precision", "recall", "f1", "accuracy"} <= set(model.evaluate(data, verbose=0))
    predicted = model.predict(data, verbose=0)
    assert [len(tags) for tags in predicted["tags"]] == [len(words) for words in data["tokens"]]


@pytest.mark.on_request
def test_question_answerer_answers_with_context_spans():
    data = load_squad(shared_file("squad", "dev-v1.1.json")).sample(8, random_state=0)
    preprocessor = kb.BertPreprocessor.from_preset("all_minilm_l6_v2_en", sequence_length=128,
                                                   pad_to_sequence_length=False)
    model = kb.BertQuestionAnswerer(tiny_backbone(), preprocessor, doc_stride=32)
    model.fit(data, epochs=1, batch_size=64, verbose=0)
    assert {"exact_match", "f1"} <= set(model.evaluate(data, verbose=0))
    for row, answer in zip(data.itertuples(), model.predict(data, verbose=0).itertuples()):
        assert row.context[answer.start:answer.end] == answer.answer


@pytest.mark.on_request
def test_multiple_choice_picks_one_ending(real_preprocessor):
    data = next_sentence_examples(load_dataset("jane_austen", "test"), 16, seed=0, max_words=8)
    model = kb.BertMultipleChoice(tiny_backbone(), real_preprocessor)
    model.fit(data, epochs=1, batch_size=16, verbose=0)
    assert set(model.evaluate(data, verbose=0)) >= {"loss", "accuracy"}
    predicted = model.predict(data, verbose=0)
    assert all(0 <= choice < 4 for choice in predicted["choice"])


@pytest.mark.on_request
def test_masked_lm_and_pretrainer(real_preprocessor):
    chapters = load_dataset("jane_austen", "test").groupby("chapter")["text"].agg("\n".join).tolist()[:4]
    pretrainer = kb.BertPretrainer(tiny_backbone(), real_preprocessor, max_sequence_length=32)
    history = pretrainer.fit(chapters, epochs=1, batch_size=512, verbose=0)
    assert {"loss", "nsp_accuracy"} <= set(history.history)
    results = pretrainer.evaluate(chapters, verbose=0)
    assert 0 < results["mlm_loss"] < 20 and 0 <= results["nsp_accuracy"] <= 1
    fill = kb.BertMaskedLM(pretrainer.backbone, real_preprocessor)
    filled = fill.predict(["Anne was a [MASK] woman."], top_k=3, verbose=0)
    assert len(filled) == 1 and len(filled["tokens"].iloc[0]) == 3
    scores = filled["scores"].iloc[0]
    assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1


@pytest.mark.all_backends
def test_keras_files_predict_identically_under_the_next_backend(real_preprocessor, tmp_path, fresh_python):
    """Classifier (pooled output), token classifier (per-token outputs) and multiple choice (choices
    axis): fitted and saved here, reloaded in a fresh process of the next backend in BACKENDS. CI runs
    this file under all three, so every backend saves once and loads once: TF -> JAX -> torch -> TF."""
    texts = reviews()["text"].tolist()
    classifier = kb.BertClassifier(tiny_backbone(), real_preprocessor, labels=["negative", "positive"])
    classifier.fit(named(reviews()), epochs=1, batch_size=16, verbose=0)
    tagger = kb.BertTokenClassifier(tiny_backbone(), real_preprocessor, labels=["O", "B-PER", "I-PER"])
    choices = next_sentence_examples(load_dataset("jane_austen", "test"), 4, seed=0, max_words=8)
    chooser = kb.BertMultipleChoice(tiny_backbone(), real_preprocessor)
    expected = {
        "classifier": np.stack(classifier.predict(texts, verbose=0)["probabilities"]),
        "tagger": tagger.predict_outputs(texts, verbose=0)[0],
        "chooser": np.stack(chooser.predict(choices, verbose=0)["probabilities"]),
    }
    for name, model in (("classifier", classifier), ("tagger", tagger), ("chooser", chooser)):
        model.save(tmp_path / f"{name}.keras")
    choices.to_json(tmp_path / "choices.json")
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    script = textwrap.dedent(f"""
        import json, keras, kerasbert, numpy as np, pandas as pd
        folder = {str(tmp_path)!r}
        texts = json.load(open(folder + "/texts.json"))
        choices = pd.read_json(folder + "/choices.json")
        load = lambda name: keras.saving.load_model(f"{{folder}}/{{name}}.keras")  # safe mode
        np.savez(f"{{folder}}/{{keras.backend.backend()}}.npz",
                 classifier=np.stack(load("classifier").predict(texts, verbose=0)["probabilities"]),
                 tagger=load("tagger").predict_outputs(texts, verbose=0)[0],
                 chooser=np.stack(load("chooser").predict(choices, verbose=0)["probabilities"]))
    """)
    backend = BACKENDS[(BACKENDS.index(keras.backend.backend()) + 1) % len(BACKENDS)]
    fresh_python(script, env={"KERAS_BACKEND": backend})
    reloaded = np.load(tmp_path / f"{backend}.npz")
    for name, values in expected.items():
        np.testing.assert_allclose(reloaded[name], values, atol=1e-5, err_msg=f"{name} under {backend}")


@pytest.mark.under_torch
def test_export_writes_a_savedmodel_that_serves_raw_strings(real_preprocessor, tmp_path):
    """Under JAX and torch, export() runs in a TensorFlow-backend subprocess (the tokeniser is TF): one code path,
    run under torch in CI (on request under JAX); TensorFlow's own export is test_bert_classifier's."""
    classifier = kb.BertClassifier(tiny_backbone(), real_preprocessor, labels=["negative", "positive"])
    texts = ["A wonderful, moving film.", "Dull plot; the battery died after an hour."]
    expected = np.stack(classifier.predict(texts, verbose=0)["probabilities"])
    classifier.export(tmp_path / "served")
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the WordPiece op)
    served = tf.saved_model.load(str(tmp_path / "served")).signatures["serve"]
    outputs = served(text=tf.constant(texts))
    np.testing.assert_allclose(outputs["probabilities"].numpy(), expected, atol=1e-5)
    assert [label.decode() for label in outputs["label"].numpy()] == classifier.predict(texts, verbose=0)["label"].tolist()
