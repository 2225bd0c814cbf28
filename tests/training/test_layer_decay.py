"""Layer-wise learning-rate decay: each variable's rate is `layer_decay ** (L + 1 - depth)`, and one AdamW
step moves each variable by that rate (Adam's first step is lr * sign(gradient))."""

import keras
import numpy as np
import pytest

from kerasbert.tasks import BertClassifier
from kerasbert.training.default_optimizer import create_optimizer
from kerasbert.training.optimizers import AdamW, layer_rate_multipliers


def test_rates_per_variable_path():
    paths = ["embedding/token_embedding/embeddings", "embedding/layer_norm/gamma",
             "encoder_block_0/attention/qkv_dense/kernel", "encoder_block_1/output_layer_norm/beta",
             "encoder_block_2/attention/lora_query/lora_a", "pooler/kernel", "logits/bias"]
    assert layer_rate_multipliers(paths, 0.9) == pytest.approx(
        [0.9 ** 4, 0.9 ** 4, 0.9 ** 3, 0.9 ** 2, 0.9, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"layer_decay must be a number in \(0, 1\]"):
        AdamW(learning_rate=1e-3, layer_decay=1.5)


def one_step(tiny_preset, uci_reviews, layer_decay):
    """Each trainable weight's change in one AdamW step on 24 real reviews (same head, no dropout)."""
    keras.utils.set_random_seed(0)
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64, num_classes=2, dropout=0.0,
                                            backbone_overrides={"dropout": 0.0, "attention_dropout": 0.0})
    classifier.compile(optimizer=create_optimizer(10, 1e-3, warmup_fraction=0.0, weight_decay=0.0,
                                                  layer_decay=layer_decay),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = {weight.path: np.array(weight) for weight in classifier.trainable_weights}
    classifier.fit(uci_reviews[0], epochs=1, batch_size=24, verbose=0)
    return {weight.path: np.array(weight) - before[weight.path] for weight in classifier.trainable_weights}


@pytest.mark.all_backends
def test_one_step_moves_each_layer_at_its_rate(tiny_preset, uci_reviews):
    plain, decayed = one_step(tiny_preset, uci_reviews, None), one_step(tiny_preset, uci_reviews, 0.5)
    expected = dict(zip(plain, layer_rate_multipliers(list(plain), 0.5)))
    assert {expected[path] for path in plain} == {0.25, 0.5, 1.0}  # embeddings, the one block, pooler and head
    moved_at = set()
    for path, step in plain.items():
        # |gradient| well above AdamW's epsilon, where the step is lr * sign(gradient) and float noise in tiny
        # gradients (thread order on CPU) cannot move it; a tiny random model leaves some biases below that.
        moved = np.abs(step) > 0.9e-3
        if moved.any():
            moved_at.add(expected[path])
        np.testing.assert_allclose(decayed[path][moved], step[moved] * expected[path], rtol=1e-3, atol=1e-9,
                                   err_msg=path)
    assert moved_at == {0.25, 0.5, 1.0}
