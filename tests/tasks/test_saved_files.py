"""`.keras` files of task models: lean for deployment, complete for resuming, short errors on load."""

import textwrap
import zipfile

import keras
import numpy as np
import pandas as pd
import pytest

from kerasbert.data.shipped import load_dataset
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.tasks.bert_classifier import BertClassifier


@pytest.fixture(scope="module")
def reviews():
    return load_dataset("uci_sentiment", "train").head(48)[["text", "label"]]


def no_dropout_classifier(preprocessor):
    backbone = BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=32, intermediate_dim=64,
                            max_sequence_length=128, dropout=0.0, attention_dropout=0.0)
    return BertClassifier(backbone, preprocessor, num_classes=2, dropout=0.0)


def test_default_save_drops_the_optimizer_and_include_optimizer_resumes(real_preprocessor, reviews, tmp_path):
    classifier = no_dropout_classifier(real_preprocessor)
    classifier.compile(optimizer=keras.optimizers.AdamW(1e-3), loss=classifier.default_loss())
    classifier.fit(reviews, epochs=1, batch_size=16, verbose=0)
    classifier.save(tmp_path / "deploy.keras")
    classifier.save(tmp_path / "resume.keras", include_optimizer=True)
    assert classifier.compiled and classifier.optimizer.iterations.numpy() == 3  # saving changed nothing

    with zipfile.ZipFile(tmp_path / "deploy.keras") as archive:
        deploy_names = set(archive.namelist())
    deployed = keras.saving.load_model(tmp_path / "deploy.keras")
    assert not deployed.compiled
    assert (tmp_path / "resume.keras").stat().st_size > 2.5 * (tmp_path / "deploy.keras").stat().st_size
    assert "assets/preprocessor/tokenizer/vocabulary.json" in deploy_names

    resumed = keras.saving.load_model(tmp_path / "resume.keras")
    assert resumed.optimizer.iterations.numpy() == 3
    for saved, original in zip(resumed.optimizer.variables, classifier.optimizer.variables):
        np.testing.assert_array_equal(np.asarray(saved), np.asarray(original), err_msg=original.path)
    continued = classifier.fit(reviews, epochs=1, batch_size=16, verbose=0, seed=1).history["loss"]
    after_reload = resumed.fit(reviews, epochs=1, batch_size=16, verbose=0, seed=1).history["loss"]
    np.testing.assert_allclose(after_reload, continued, rtol=1e-6)


def test_default_schedule_continues_after_reload(real_preprocessor, reviews, tmp_path):
    classifier = no_dropout_classifier(real_preprocessor)
    classifier.fit(reviews, epochs=1, batch_size=16, verbose=0)
    learning_rate = classifier.optimizer.learning_rate.numpy()
    classifier.save(tmp_path / "resume.keras", include_optimizer=True)
    resumed = keras.saving.load_model(tmp_path / "resume.keras")
    assert type(resumed.optimizer) is type(classifier.optimizer)
    assert resumed.optimizer.iterations.numpy() == 3
    np.testing.assert_allclose(resumed.optimizer.learning_rate.numpy(), learning_rate)


def test_a_missing_class_on_load_gives_a_short_error(real_preprocessor, tmp_path, fresh_python):
    """The vocabulary is an asset, so the config Keras prints in its error stays small."""
    script = textwrap.dedent(f"""
        import keras
        from kerasbert.tasks.bert_classifier import BertClassifier
        from kerasbert.families.bert.bert_backbone import BertBackbone
        from kerasbert.families.bert_preprocessor import BertPreprocessor

        @keras.saving.register_keras_serializable(package="only_in_the_writer")
        class MeanHead(keras.layers.Layer):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.logits = keras.layers.Dense(2)

            def call(self, features):
                return self.logits(keras.ops.mean(features["sequence_output"], axis=1))

        backbone = BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=32,
                                intermediate_dim=64, max_sequence_length=128)
        preprocessor = BertPreprocessor.from_preset("all_minilm_l6_v2_en", sequence_length=32)
        BertClassifier(backbone, preprocessor, num_classes=2, head=MeanHead()).save({str(tmp_path / "m.keras")!r})
    """)
    fresh_python(script)
    with pytest.raises(TypeError, match="MeanHead") as error:
        keras.saving.load_model(tmp_path / "m.keras")
    assert len(str(error.value)) < 20_000


def test_pretrainer_reloads_with_its_vocabulary(tmp_path):
    """The pre-trainer checks its masking against the vocabulary, which a `.keras` file gives last."""
    from kerasbert.tasks.bert_pretrainer import BertPretrainer

    pretrainer = BertPretrainer.from_preset("all_minilm_l6_v2_en", load_weights=False)
    pretrainer.save(tmp_path / "pretrainer.keras")
    reloaded = keras.saving.load_model(tmp_path / "pretrainer.keras")
    assert reloaded.tokenizer.get_vocabulary() == pretrainer.tokenizer.get_vocabulary()
    reloaded.masker(seed=0)
    assert isinstance(reloaded.tokenizer(pd.Series(["a text"]).tolist()).to_list(), list)
