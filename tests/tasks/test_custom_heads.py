"""The `head=` hook of the task models: a mean-pooling MLP head on the real all-MiniLM-L6-v2 weights
trains from a DataFrame, reloads from `.keras` and serves raw strings from `export()`; token, span and
choice heads swap in on a tiny backbone; a head of the wrong shape is a named error.
"""

import textwrap
import warnings

import keras
import numpy as np
import pandas as pd
import pytest
from keras import ops

import kerasbert as kb

TEXTS = ["A wonderful, moving film.", "Dull plot; the battery died after an hour."]


@keras.saving.register_keras_serializable(package="kerasbert_tests")
class MeanPoolingMLPHead(keras.layers.Layer):
    """Mean of the real tokens' states, then a two-layer MLP: `units` logits per row (per token
    with `per_token=True`)."""

    def __init__(self, units, hidden=64, per_token=False, **kwargs):
        super().__init__(**kwargs)
        self.units, self.hidden, self.per_token = units, hidden, per_token
        self.hidden_layer = keras.layers.Dense(hidden, activation="gelu")
        self.output_layer = keras.layers.Dense(units, dtype="float32")

    def call(self, features):
        states = features["sequence_output"]
        if not self.per_token:
            mask = ops.cast(features["padding_mask"], states.dtype)[..., None]
            states = ops.sum(states * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)
        return self.output_layer(self.hidden_layer(states))

    def get_config(self):
        return {**super().get_config(), "units": self.units, "hidden": self.hidden, "per_token": self.per_token}


def test_mean_pooling_mlp_head_fits_a_dataframe_reloads_and_exports(tiny_preset, tmp_path, fresh_python):
    reviews = kb.data.load_dataset("uci_sentiment", "train").head(32)
    classifier = kb.BertClassifier.from_preset(str(tiny_preset), sequence_length=32, labels=[0, 1],
                                               head=MeanPoolingMLPHead(2))
    assert classifier.logits_layer is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the unused pooler is not warned about
        losses = classifier.fit(reviews, epochs=3, batch_size=16, learning_rate=1e-3, verbose=0).history["loss"]
    assert losses[-1] < losses[0]
    expected = np.stack(classifier.predict(TEXTS)["probabilities"])

    classifier.save(tmp_path / "head.keras")
    reloaded = keras.saving.load_model(tmp_path / "head.keras")
    assert isinstance(reloaded.head, MeanPoolingMLPHead) and reloaded.head.hidden == 64
    np.testing.assert_allclose(np.stack(reloaded.predict(TEXTS)["probabilities"]), expected, atol=1e-6)

    classifier.export(tmp_path / "served")
    script = textwrap.dedent(f"""
        import numpy as np, tensorflow as tf, tensorflow_text  # no kerasbert, no head class
        served = tf.saved_model.load({str(tmp_path / "served")!r})
        np.save({str(tmp_path / "p.npy")!r}, served.signatures["serve"](text=tf.constant({TEXTS!r}))["probabilities"].numpy())
    """)
    fresh_python(script, imports=("tensorflow", "tensorflow_text"))
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), expected, atol=1e-5)


def test_token_span_and_choice_tasks_take_a_head(tiny_backbone, real_preprocessor, tmp_path):
    tagger = kb.BertTokenClassifier(tiny_backbone, real_preprocessor, labels=["O", "B-PER", "I-PER"],
                                    head=MeanPoolingMLPHead(3, per_token=True))
    frame = tagger.predict(["Ada Lovelace wrote it ."])
    assert len(frame) == 1 and len(frame["tags"].iloc[0]) == 5

    qa = kb.BertQuestionAnswerer(kb.BertBackbone.from_config(tiny_backbone.get_config()), real_preprocessor,
                                 doc_stride=16, max_question_length=16, head=MeanPoolingMLPHead(2, per_token=True))
    answer = qa.predict([{"question": "Who wrote it?", "context": "Ada wrote it in 1843."}])
    assert answer["answer"].iloc[0] in "Ada wrote it in 1843."

    chooser = kb.BertMultipleChoice(kb.BertBackbone.from_config(tiny_backbone.get_config()), real_preprocessor,
                                    head=MeanPoolingMLPHead(1))
    swag = pd.DataFrame({"context": ["She opened the umbrella."], "endings": [["It rained.", "It was dry.", "A cat sang."]]})
    probabilities = np.stack(chooser.predict(swag)["probabilities"])
    assert probabilities.shape == (1, 3)
    chooser.save(tmp_path / "choice.keras")
    np.testing.assert_allclose(np.stack(keras.saving.load_model(tmp_path / "choice.keras").predict(swag)["probabilities"]),
                               probabilities, atol=1e-6)


def test_a_head_of_the_wrong_shape_is_a_named_error(tiny_backbone, real_preprocessor):
    with pytest.raises(ValueError, match=r"MeanPoolingMLPHead of BertClassifier returns shape \(None, 3\); "
                                         r"BertClassifier needs logits of shape \(None, 2\)"):
        kb.BertClassifier(tiny_backbone, real_preprocessor, labels=["a", "b"], head=MeanPoolingMLPHead(3))
    with pytest.raises(ValueError, match=r"BertTokenClassifier needs logits of shape \(None, None, 3\)"):
        kb.BertTokenClassifier(tiny_backbone, real_preprocessor, labels=["O", "B", "I"], head=MeanPoolingMLPHead(3))


@keras.saving.register_keras_serializable(package="kerasbert_tests")
class UntiedMaskedLMHead(keras.layers.Layer):
    """A masked-LM head with its own decoder (not tied to the token embedding), for a research MLM;
    with `next_sentence=True` also a 2-way [CLS] classifier, as `BertPretrainer` wants."""

    def __init__(self, vocabulary_size, next_sentence=False, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size, self.next_sentence = vocabulary_size, next_sentence
        self.decoder = keras.layers.Dense(vocabulary_size, dtype="float32")
        self.nsp = keras.layers.Dense(2, dtype="float32") if next_sentence else None

    def call(self, features):
        states = ops.take_along_axis(features["sequence_output"], features["mask_positions"][..., None], axis=1)
        logits = self.decoder(states)
        if self.nsp is None:
            return logits
        return {"mlm": logits, "nsp": self.nsp(features["pooled_output"])}

    def get_config(self):
        return {**super().get_config(), "vocabulary_size": self.vocabulary_size, "next_sentence": self.next_sentence}


def test_masked_lm_and_pretrainer_take_a_head(tiny_backbone, real_preprocessor, tmp_path):
    fill = kb.BertMaskedLM(tiny_backbone, real_preprocessor, head=UntiedMaskedLMHead(30522))
    assert fill.mlm_head is None
    predicted = fill.predict(["Mr. Darcy was a [MASK] man."], top_k=3)
    assert len(predicted) == 1 and len(predicted["tokens"].iloc[0]) == 3
    fill.save(tmp_path / "fill.keras")
    reloaded = keras.saving.load_model(tmp_path / "fill.keras")
    np.testing.assert_allclose(np.stack(reloaded.predict(["Mr. Darcy was a [MASK] man."], top_k=3)["scores"]),
                               np.stack(predicted["scores"]), atol=1e-6)
    with pytest.raises(ValueError, match="custom layer .UntiedMaskedLMHead.*model.save"):
        fill.save_to_preset(tmp_path / "preset")

    documents = kb.data.load_dataset("jane_austen", "test")["text"].tolist()[:40]
    pretrainer = kb.BertPretrainer(kb.BertBackbone.from_config(tiny_backbone.get_config()), real_preprocessor,
                                   max_sequence_length=32, head=UntiedMaskedLMHead(30522, next_sentence=True))
    history = pretrainer.fit(documents, epochs=1, batch_size=8, verbose=0).history
    assert np.isfinite(history["loss"][0]) and "nsp_accuracy" in history
    with pytest.raises(ValueError, match=r"BertPretrainer needs logits of shape \{'mlm'"):
        kb.BertPretrainer(kb.BertBackbone.from_config(tiny_backbone.get_config()), real_preprocessor,
                          head=UntiedMaskedLMHead(30522))
