"""Task weight files: a LoRA or adapter task stores only what it trained, and rebuilds on the preset with
identical outputs; a file of another task, backbone or format is a named error."""

import numpy as np
import pytest

from kerasbert.fine_tuning import FineTuningConfig
from kerasbert.tasks import BertClassifier, BertTokenClassifier


@pytest.fixture(scope="module")
def lora_classifier(tiny_preset, uci_reviews):
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64,
                                            fine_tuning=FineTuningConfig("lora", lora_rank=2))
    classifier.fit(uci_reviews[0].assign(label=lambda df: df["label"].map({0: "negative", 1: "positive"})),
                   epochs=1, batch_size=8, verbose=0, learning_rate=1e-2)  # labels learned by this first fit
    return classifier


def test_a_task_file_holds_only_what_trained_and_rebuilds_the_task(lora_classifier, tiny_preset, tmp_path):
    path = lora_classifier.save_task_weights(tmp_path / "sentiment.safetensors")
    lora_classifier.save(tmp_path / "whole.keras")
    trained = sum(int(np.prod(weight.shape)) for weight in lora_classifier.trainable_weights)
    assert path.stat().st_size < 4 * trained + 10_000 < (tmp_path / "whole.keras").stat().st_size / 20
    again = BertClassifier.from_task_weights(path, tiny_preset)
    assert again.labels == ["negative", "positive"] and again.fine_tuning == "lora" and again.backbone.lora_rank == 2
    texts = ["A wonderful, moving film.", "Dull plot.", ""]
    np.testing.assert_array_equal(np.stack(again.predict(texts, verbose=0)["probabilities"]),
                                  np.stack(lora_classifier.predict(texts, verbose=0)["probabilities"]))


def test_files_of_another_task_backbone_or_format_are_named(lora_classifier, tiny_preset, tmp_path):
    path = lora_classifier.save_task_weights(tmp_path / "sentiment.safetensors")
    with pytest.raises(ValueError, match="holds the weights of a BertClassifier, not of a BertTokenClassifier"):
        BertTokenClassifier.from_task_weights(path, tiny_preset)
    other_rank = BertClassifier.from_preset(tiny_preset, labels=["negative", "positive"],
                                            fine_tuning=FineTuningConfig("lora", lora_rank=4))
    with pytest.raises(ValueError, match="was trained on another backbone: lora_rank 2 there, 4 here"):
        other_rank.load_task_weights(path)
    other_labels = BertClassifier.from_preset(tiny_preset, labels=["bad", "good"],
                                              fine_tuning=FineTuningConfig("lora", lora_rank=2))
    with pytest.raises(ValueError, match=r"was trained for the labels \['negative', 'positive'\]"):
        other_labels.load_task_weights(path)
    corrupt = tmp_path / "corrupt.safetensors"
    corrupt.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ValueError, match="is not a readable safetensors file"):
        BertClassifier.from_task_weights(corrupt, tiny_preset)
    with pytest.raises(ValueError, match="task weight files end in .safetensors"):
        lora_classifier.save_task_weights(tmp_path / "sentiment.keras")
