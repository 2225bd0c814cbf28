"""`fine_tuning=` on every task model: which weights train in each mode, a fit moves only those, and the
task round-trips through `.keras` (fresh process, safe mode) and `export()` with identical outputs."""

import textwrap

import keras
import numpy as np
import pytest

from kerasbert.fine_tuning import FineTuningConfig
from kerasbert.tasks import BertClassifier, BertMultipleChoice, BertQuestionAnswerer, BertTokenClassifier


def weights_by_path(model):
    return {weight.path: np.array(weight) for weight in model.weights}


def trainable_paths(model):
    return {weight.path for weight in model.trainable_weights}


def train(uci_reviews):
    return uci_reviews[0].assign(label=lambda df: df["label"].map({0: "negative", 1: "positive"}))


@pytest.mark.parametrize("fine_tuning, options, trains", [
    ("frozen", {}, ("logits",)),
    (FineTuningConfig("frozen", layer_mix=True), {}, ("logits", "layer_mix")),
    (FineTuningConfig("adapters", adapter_size=4), {}, ("logits", "adapter", "layer_norm")),
    (FineTuningConfig("lora", lora_rank=2), {}, ("logits", "lora_")),
])
def test_only_the_chosen_weights_train_and_the_task_reloads(tiny_preset, uci_reviews, tmp_path, fine_tuning, options,
                                                            trains, fresh_python):
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64, labels=["negative", "positive"],
                                            fine_tuning=fine_tuning, **options)
    mode = FineTuningConfig.coerce(fine_tuning).mode
    trainable = trainable_paths(classifier)
    assert trainable and all(any(part in path for part in trains) for path in trainable), sorted(trainable)
    assert not any("embedding" in path or "pooler" in path or "qkv_dense" in path for path in trainable)
    if mode != "lora":  # the LayerNorms train in Houlsby adapters, not in LoRA
        assert any("layer_norm" in path for path in trainable) == (mode == "adapters")
    before = weights_by_path(classifier)
    classifier.fit(train(uci_reviews), epochs=2, batch_size=8, verbose=0, learning_rate=1e-2)
    after = weights_by_path(classifier)
    moved = {path for path in before if not np.array_equal(before[path], after[path])}
    assert moved and moved <= trainable, sorted(moved - trainable)

    texts = ["A wonderful, moving film.", "Dull plot; the battery died after an hour.", ""]
    expected = np.stack(classifier.predict(texts, verbose=0)["probabilities"])
    classifier.save(tmp_path / "task.keras")
    script = textwrap.dedent(f"""
        import keras, numpy as np, kerasbert
        model = keras.saving.load_model({str(tmp_path / "task.keras")!r}, safe_mode=True)
        assert model.fine_tuning == {mode!r}, model.fine_tuning
        print(len(model.trainable_weights))
        np.save({str(tmp_path / "p.npy")!r}, np.stack(model.predict({texts!r}, verbose=0)["probabilities"]))
    """)
    run = fresh_python(script)
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), expected)
    assert int(run.stdout.split()[-1]) == len(trainable)


def test_a_lora_classifier_exports_raw_string_serving(tiny_preset, uci_reviews, tmp_path, fresh_python):
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64, labels=["negative", "positive"],
                                            fine_tuning=FineTuningConfig("lora", lora_rank=2,
                                                                         lora_targets=["query", "value", "output"]))
    classifier.fit(train(uci_reviews), epochs=1, batch_size=8, verbose=0, learning_rate=1e-2)
    texts = ["A wonderful, moving film.", "Dull plot."]
    expected = np.stack(classifier.predict(texts, verbose=0)["probabilities"])
    classifier.export(tmp_path / "served")
    script = textwrap.dedent(f"""
        import numpy as np, tensorflow as tf, tensorflow_text
        served = tf.saved_model.load({str(tmp_path / "served")!r})
        np.save({str(tmp_path / "p.npy")!r}, served.signatures["serve"](text=tf.constant({texts!r}))["probabilities"])
    """)
    fresh_python(script, imports=("tensorflow", "tensorflow_text"))
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), expected, atol=1e-6)


@pytest.mark.parametrize("task_class, arguments", [
    (BertTokenClassifier, {"labels": ["O", "B-PER", "B-LOC"]}),
    (BertQuestionAnswerer, {"doc_stride": 16, "max_question_length": 16}),
    (BertMultipleChoice, {"num_choices": 2}),
])
@pytest.mark.parametrize("fine_tuning, options", [(FineTuningConfig("adapters", adapter_size=4), {}),
                                                  (FineTuningConfig("lora", lora_rank=2), {}),
                                                  (FineTuningConfig("frozen", layer_mix=True), {})])
def test_every_task_model_takes_each_mode(tiny_preset, task_class, arguments, fine_tuning, options):
    task = task_class.from_preset(tiny_preset, sequence_length=64, fine_tuning=fine_tuning, **arguments, **options)
    trainable = trainable_paths(task)
    assert trainable and not any("embedding" in path or "qkv_dense/kernel" in path for path in trainable)
    reloaded = task_class.from_config(task.get_config())
    assert trainable_paths(reloaded) == trainable and reloaded.fine_tuning == FineTuningConfig.coerce(fine_tuning).mode


@pytest.mark.parametrize("arguments, message", [
    ({"fine_tuning": "partial"}, "fine_tuning='partial' is not one of ['full', 'frozen', 'adapters', 'lora']"),
    ({"fine_tuning": FineTuningConfig("adapters", adapter_size=20)},
     "adapter_size must be an int from 1 to 16, got 20. 16 is the hidden size."),
    ({"fine_tuning": FineTuningConfig("lora", lora_rank=32)},
     "lora_rank must be an int from 1 to 16, got 32. 16 is the hidden size."),
    ({"fine_tuning": FineTuningConfig("frozen", layer_mix=True), "head": keras.layers.Dense(2)},
     "layer_mix=True mixes the layers for the default"),
])
def test_bad_fine_tuning_arguments_are_named(tiny_preset, arguments, message):
    with pytest.raises(ValueError) as raised:
        BertClassifier.from_preset(tiny_preset, num_classes=2, **arguments)
    assert message in str(raised.value)


@pytest.mark.parametrize("make, error, message", [
    (lambda: FineTuningConfig("full", lora_rank=4), ValueError, "lora_rank, lora_alpha and lora_targets apply to mode"),
    (lambda: FineTuningConfig("lora", adapter_size=4), ValueError, "adapter_size applies to mode 'adapters'"),
    (lambda: FineTuningConfig("adapters", adapter_size=0), ValueError, "adapter_size must be an int of at least 1"),
    (lambda: FineTuningConfig("lora", lora_rank=2.5), TypeError, "lora_rank must be an int"),
    (lambda: FineTuningConfig.coerce(["lora"]), TypeError, "fine_tuning takes a mode name"),
])
def test_bad_fine_tuning_configs_are_named(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_sizes_given_outside_the_config_name_the_config(tiny_preset):
    with pytest.raises(TypeError, match=r"pass fine_tuning=FineTuningConfig\('lora', lora_rank=8\)"):
        BertClassifier.from_preset(tiny_preset, num_classes=2, fine_tuning="lora", lora_rank=8)


def test_layer_mix_needs_hidden_states(tiny_preset):
    plain = BertClassifier.from_preset(tiny_preset, num_classes=2)
    with pytest.raises(ValueError, match="layer_mix=True needs a backbone built with output_hidden_states=True"):
        BertClassifier(plain.backbone, plain.preprocessor, num_classes=2,
                       fine_tuning=FineTuningConfig("full", layer_mix=True))
    with pytest.raises(TypeError, match=r"pass fine_tuning=FineTuningConfig\('frozen', layer_mix=True\)"):
        BertClassifier.from_preset(tiny_preset, num_classes=2, fine_tuning="frozen", layer_mix=True)
    with pytest.raises(ValueError, match="fine_tuning='lora' needs a backbone with LoRA updates"):
        BertClassifier(plain.backbone, plain.preprocessor, num_classes=2, fine_tuning="lora")
