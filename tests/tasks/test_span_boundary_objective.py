"""SpanBERT pre-training on Jane Austen: span masking plus the span-boundary objective (loss = MLM + SBO),
trained, evaluated, saved and reloaded. The head's equations are checked in tests/layers/test_span_boundary_head.py."""

import keras
import numpy as np
import pytest

from kerasbert.data.masking_config import MaskingConfig
from kerasbert.data.shipped import load_dataset
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.layers.span_boundary_head import span_boundaries
from kerasbert.tasks.bert_pretrainer import BertPretrainer


def spanbert(preprocessor):
    backbone = BertBackbone(vocabulary_size=30522, num_layers=2, num_heads=2, hidden_dim=32, intermediate_dim=64,
                            max_sequence_length=128)
    return BertPretrainer(backbone, preprocessor, next_sentence=None, max_sequence_length=64,
                          masking=MaskingConfig(strategy="span"), span_boundary_objective=True)


@pytest.fixture(scope="module")
def chapters():
    paragraphs = load_dataset("jane_austen", "train")
    return paragraphs.groupby(["book", "chapter"], sort=False)["text"].agg("\n".join).tolist()[1:3]


@pytest.fixture(scope="module")
def held_out():
    paragraphs = load_dataset("jane_austen", "test")
    return paragraphs.groupby(["book", "chapter"], sort=False)["text"].agg("\n".join).tolist()[1:2]


def test_span_masks_give_sbo_targets_around_real_spans(real_preprocessor, chapters):
    model = spanbert(real_preprocessor)
    inputs, targets, weights = next(iter(model.pretraining_dataset(chapters, batch_size=64, dynamic=False)))
    np.testing.assert_array_equal(targets["sbo"], targets["mlm"])
    np.testing.assert_array_equal(weights["sbo"], weights["mlm"])
    positions = inputs["mask_positions"].numpy()
    left, right, place = (keras.ops.convert_to_numpy(part) for part in span_boundaries(positions, 64))
    real = weights["mlm"].numpy() > 0
    span_lengths = (right - left - 1)[real]
    print(f"span masking: mean span {span_lengths.mean():.2f} tokens, longest {span_lengths.max()}")
    assert span_lengths.mean() > 1.5 and (place[real] <= span_lengths).all()
    for row, slot in zip(*np.nonzero(real)):  # the boundaries are tokens the model sees (0: padding slots)
        masked = set(positions[row][positions[row] > 0])
        assert left[row, slot] not in masked and right[row, slot] not in masked


def test_both_heads_train_evaluate_and_reload(real_preprocessor, chapters, held_out, tmp_path):
    keras.utils.set_random_seed(0)
    model = spanbert(real_preprocessor)
    history = model.fit(chapters, epochs=2, batch_size=16, learning_rate=5e-3, verbose=0).history
    print({name: [round(value, 3) for value in values] for name, values in history.items()})
    assert history["sbo_loss"][-1] < history["sbo_loss"][0] - 0.3  # 10.24 -> 9.71 nats (chance: ln 30522 = 10.33)

    results = model.evaluate(held_out, verbose=0)
    assert {"sbo_loss", "sbo_accuracy", "mlm_loss"} <= set(results)
    assert results["loss"] == pytest.approx(results["mlm_loss"] + results["sbo_loss"])

    inputs, _, _ = next(iter(model.pretraining_dataset(held_out, batch_size=8, dynamic=False)))
    expected = model.predict_on_batch(inputs)
    assert not np.allclose(expected["sbo"], expected["mlm"])
    model.save(tmp_path / "spanbert.keras")
    reloaded = keras.saving.load_model(tmp_path / "spanbert.keras")
    assert reloaded.sbo_head.token_embedding is reloaded.backbone.token_embedding
    for name, value in reloaded.predict_on_batch(inputs).items():
        np.testing.assert_array_equal(value, expected[name])


def test_the_option_is_checked_before_building(real_preprocessor):
    backbone = BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32)
    with pytest.raises(TypeError, match="span_boundary_objective must be True or False"):
        BertPretrainer(backbone, real_preprocessor, span_boundary_objective="yes")
    with pytest.raises(ValueError, match="custom `head` replaces them"):
        BertPretrainer(backbone, real_preprocessor, span_boundary_objective=True, head=keras.layers.Dense(2))
