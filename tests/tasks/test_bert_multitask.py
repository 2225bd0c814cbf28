"""BertMultiTask (MT-DNN): tasks read from DataFrames, batches mixed in proportion, a batch trains only its
own head (and the shared encoder), one task alone trains as its single-task model does, and one `.keras`
reloads every head in a fresh process."""

import textwrap

import keras
import numpy as np
import pandas as pd
import pytest

from kerasbert.data.task_mixing import task_order
from kerasbert.tasks import BertClassifier, BertMultiTask

NO_DROPOUT = {"dropout": 0.0, "attention_dropout": 0.0}


@pytest.fixture(scope="module")
def task_data(uci_reviews):
    reviews = uci_reviews[0].assign(label=lambda df: df["label"].map({0: "negative", 1: "positive"}))
    texts = uci_reviews[0]["text"].tolist()
    similarity = pd.DataFrame({"text": texts[:16], "text_pair": texts[8:24], "label": np.linspace(0.0, 5.0, 16)})
    entities = pd.DataFrame({"tokens": [["Emma", "met", "Harriet", "at", "Hartfield"], ["Mr.", "Knightley"]] * 8,
                             "tags": [["B-PER", "O", "B-PER", "O", "B-LOC"], ["B-PER", "I-PER"]] * 8})
    return {"sentiment": reviews, "similarity": similarity, "entities": entities}


@pytest.fixture(scope="module")
def multitask(tiny_preset, task_data):
    """The three tasks of `task_data` on the tiny preset (building one reads every task's data: seconds). The tests
    sharing it only read it, check errors raised before any work, or compare weights before and after their own fit."""
    return BertMultiTask.from_preset(tiny_preset, sequence_length=64, tasks=task_data)


def weights_of(layer):
    return [np.array(weight) for weight in layer.weights]


def test_tasks_are_read_from_their_data(multitask, task_data):
    sentiment, similarity, entities = (multitask.task(name) for name in task_data)
    assert sentiment.class_names == ["negative", "positive"] and sentiment.uses_pairs is False
    assert similarity.problem_type == "regression" and similarity.uses_pairs is True
    assert entities.labels == ["B-LOC", "B-PER", "I-PER", "O"]
    assert {name: tuple(output.shape) for name, output in multitask.output.items()} == {
        "sentiment": (None, 2), "similarity": (None, 1), "entities": (None, None, 4)}
    assert all(view.backbone is multitask.backbone for view in (sentiment, similarity, entities))


def test_proportional_mixing_holds_each_task_once_per_epoch():
    order = task_order([3, 1, 2], epochs=2, mixing="proportional", seed=0)
    assert [np.bincount(epoch, minlength=3).tolist() for epoch in order.reshape(2, 6)] == [[3, 1, 2]] * 2
    assert not np.array_equal(order[:6], order[6:])  # each epoch shuffled again
    drawn = task_order([50, 50], epochs=1, mixing=[3, 1], seed=0)
    assert 60 < np.bincount(drawn)[0] < 90  # about 3 : 1


def test_a_batch_trains_only_its_own_head(multitask, task_data):
    before = {name: weights_of(multitask.task(name).head) for name in task_data}
    encoder_before = weights_of(multitask.backbone)
    multitask.fit({"sentiment": task_data["sentiment"], "entities": task_data["entities"]}, epochs=1, batch_size=24,
                  verbose=0)
    moved = {name: not all(np.array_equal(a, b) for a, b in zip(before[name], weights_of(multitask.task(name).head)))
             for name in task_data}
    assert moved == {"sentiment": True, "similarity": False, "entities": True}
    assert not all(np.array_equal(a, b) for a, b in zip(encoder_before, weights_of(multitask.backbone)))


def test_one_task_alone_trains_as_its_single_task_model(tiny_preset, task_data):
    data = task_data["sentiment"]
    multitask = BertMultiTask.from_preset(tiny_preset, sequence_length=64, backbone_overrides=NO_DROPOUT,
                                          tasks={"sentiment": {"kind": "classifier", "dropout": 0.0,
                                                               "labels": ["negative", "positive"]}})
    single = BertClassifier.from_preset(tiny_preset, sequence_length=64, backbone_overrides=NO_DROPOUT,
                                        labels=["negative", "positive"], dropout=0.0)
    single.get_layer("logits").set_weights(multitask.task("sentiment").head.dense.get_weights())
    # With gradient accumulation, as both pass it to the same optimizer: 3 batches an update, 2 updates.
    options = {"epochs": 2, "batch_size": 8, "learning_rate": 1e-3, "gradient_accumulation_steps": 3, "verbose": 0}
    history = multitask.fit({"sentiment": data}, **options)
    single_history = single.fit(data, **options)
    assert int(multitask.optimizer.iterations) == int(single.optimizer.iterations) == 2
    np.testing.assert_allclose(history.history["loss"], single_history.history["loss"], rtol=1e-4)
    for ours, theirs in zip(weights_of(multitask.backbone), weights_of(single.backbone)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-5)
    texts = data["text"].tolist()[:4]
    np.testing.assert_allclose(np.stack(multitask.predict(texts, task="sentiment", verbose=0)["probabilities"]),
                               np.stack(single.predict(texts, verbose=0)["probabilities"]), atol=1e-4)


def test_one_file_reloads_every_head(tiny_preset, task_data, tmp_path, fresh_python):
    keras.utils.set_random_seed(0)
    multitask = BertMultiTask.from_preset(tiny_preset, sequence_length=64, tasks=task_data)
    multitask.fit({"sentiment": task_data["sentiment"]}, epochs=1, batch_size=8, verbose=0)  # one head trained
    sentence = ["Emma met Harriet at Hartfield"]
    pair = {"text": ["A fine day."], "text_pair": ["The day was fine."]}
    expected = (np.stack(multitask.predict(sentence, task="sentiment", verbose=0)["probabilities"]),
                multitask.predict(pair, task="similarity", verbose=0)["prediction"].to_numpy(),
                multitask.predict(sentence, task="entities", verbose=0)["tags"][0])
    multitask.save(tmp_path / "multitask.keras")
    script = textwrap.dedent(f"""
        import json, keras, numpy as np, kerasbert
        model = keras.saving.load_model({str(tmp_path / "multitask.keras")!r}, safe_mode=True)
        sentiment = np.stack(model.predict({sentence!r}, task="sentiment", verbose=0)["probabilities"])
        similarity = model.predict({pair!r}, task="similarity", verbose=0)["prediction"].to_numpy()
        np.save({str(tmp_path / "s.npy")!r}, sentiment); np.save({str(tmp_path / "r.npy")!r}, similarity)
        print(json.dumps([model.task_names, list(model.predict({sentence!r}, task="entities", verbose=0)["tags"][0])]))
    """)
    run = fresh_python(script)
    names, tags = __import__("json").loads(run.stdout.strip().splitlines()[-1])
    assert names == ["sentiment", "similarity", "entities"] and tags == list(expected[2])
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy"), expected[0])
    np.testing.assert_array_equal(np.load(tmp_path / "r.npy"), expected[1])


def test_bad_input_is_named(tiny_preset, multitask, task_data):
    with pytest.raises(ValueError, match=r"Unknown task\(s\) \['sentimnet'\]"):
        multitask.fit({"sentimnet": task_data["sentiment"]})
    with pytest.raises(ValueError, match="mixing must be 'proportional' or a dict"):
        multitask.fit({"sentiment": task_data["sentiment"]}, mixing="uniform")
    with pytest.raises(ValueError, match="In task 'sentiment': .*label"):
        multitask.fit({"sentiment": task_data["sentiment"].drop(columns="label")})
    with pytest.raises(ValueError, match="Name the task to predict"):
        multitask.predict(["text"])
    with pytest.raises(ValueError, match="Task 'x': give labels"):
        BertMultiTask.from_preset(tiny_preset, tasks={"x": {"kind": "classifier"}})
