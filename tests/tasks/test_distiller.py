"""Knowledge distillation (Hinton et al. 2015; DistilBERT; TinyBERT): the loss against a numpy hand computation,
alpha=0 as plain fine-tuning, a frozen teacher, the every-other-layer student, saving, token classification and
bad input. Tiny backbones with the real all-MiniLM-L6-v2 vocabulary and real reviews."""

import keras
import numpy as np
import pandas as pd
import pytest

import kerasbert as kb
from kerasbert.distillation.distiller import (
    HAS_LABEL,
    Distiller,
    attention_map_loss,
    hard_target_loss,
    hidden_state_loss,
    soft_target_loss,
)
from kerasbert.distillation.student_models import student_from_teacher

LABELS = ["negative", "positive"]
TAGS = ["B-LOC", "B-PER", "I-PER", "O"]
SENTENCES = [  # real sentences, tagged by hand
    ("Peter Blackburn met the farm ministers in Brussels .", "B-PER I-PER O O O O O B-LOC O"),
    ("Anne Elliot walked to Bath with Lady Russell .", "B-PER I-PER O O B-LOC O B-PER I-PER O"),
    ("The battery died after an hour in London .", "O O O O O O O B-LOC O"),
    ("Emma Woodhouse lived at Hartfield near Highbury .", "B-PER I-PER O O B-LOC O B-LOC O"),
    ("Mr. Darcy left Pemberley for Netherfield .", "B-PER I-PER O B-LOC O B-LOC O"),
    ("The film was shot in Paris .", "O O O O O B-LOC O"),
    ("Captain Wentworth came back to Kellynch .", "B-PER I-PER O O O B-LOC O"),
    ("Fanny Price stayed at Mansfield Park .", "B-PER I-PER O O B-LOC I-PER O"),
]


def tiny_backbone(num_layers=4, dropout=0.0, seed=0, **options):
    keras.utils.set_random_seed(seed)
    return kb.BertBackbone(vocabulary_size=30522, num_layers=num_layers, num_heads=2, hidden_dim=16,
                           intermediate_dim=32, max_sequence_length=64, dropout=dropout, attention_dropout=dropout,
                           **options)


def named(frame):
    return frame.assign(label=frame["label"].map(dict(enumerate(LABELS))))


def tagged():
    return pd.DataFrame({"tokens": [text.split() for text, _ in SENTENCES],
                         "tags": [tags.split() for _, tags in SENTENCES]})


@pytest.fixture(scope="module")
def teacher(real_preprocessor):
    """A 4-block classifier (random weights; its labels are known, which is what distillation needs)."""
    return kb.BertClassifier(tiny_backbone(), real_preprocessor, labels=LABELS, dropout=0.0)


def log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def hand_soft(student, teacher, temperature, weight=None):
    """T^2 KL(p_teacher || p_student) at temperature T, averaged (over `weight` == 1)."""
    log_t, log_s = log_softmax(teacher / temperature), log_softmax(student / temperature)
    divergence = (np.exp(log_t) * (log_t - log_s)).sum(-1)
    weight = np.ones_like(divergence) if weight is None else weight
    return temperature ** 2 * (divergence * weight).sum() / weight.sum()


def hand_hard(student, labels, weight=None):
    losses = -np.take_along_axis(log_softmax(student), labels[..., None], -1)[..., 0]
    weight = np.ones_like(losses) if weight is None else weight
    return (losses * weight).sum() / weight.sum()


def test_loss_parts_equal_a_hand_computation():
    rng = np.random.default_rng(0)
    student, teacher = rng.normal(size=(2, 5, 3), scale=3.0).astype("float32")
    labels = rng.integers(0, 3, size=5)
    np.testing.assert_allclose(float(soft_target_loss(student, teacher, 2.5)), hand_soft(student, teacher, 2.5),
                               rtol=1e-5)
    assert float(soft_target_loss(student, student, 2.5)) == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(float(hard_target_loss(student, labels)), hand_hard(student, labels), rtol=1e-5)
    weight = np.array([1, 0, 1, 1, 0], "float32")  # e.g. labelled rows, or each word's first piece
    np.testing.assert_allclose(float(soft_target_loss(student, teacher, 1.0, weight)),
                               hand_soft(student, teacher, 1.0, weight), rtol=1e-5)
    np.testing.assert_allclose(float(hard_target_loss(student, labels, weight)), hand_hard(student, labels, weight),
                               rtol=1e-5)

    # TinyBERT's terms: hidden states through a projection (MSE over units and real tokens), attention rows.
    states = rng.normal(size=(2, 2, 3, 4)).astype("float32")  # [layers, batch, T, width]
    targets = rng.normal(size=(2, 2, 3, 6)).astype("float32")
    mask = np.array([[1, 1, 1], [1, 1, 0]], "int32")
    projection = keras.layers.Dense(6)
    projection.build((None, None, 4))
    kernel, bias = projection.get_weights()
    per_layer = [(((s @ kernel + bias - t) ** 2).mean(-1) * mask).sum() / mask.sum() for s, t in zip(states, targets)]
    np.testing.assert_allclose(float(hidden_state_loss(list(states), list(targets), projection, mask)),
                               np.mean(per_layer), rtol=1e-5)
    maps = rng.dirichlet(np.ones(3), size=(2, 2, 2, 3)).astype("float32")  # [layers, batch, heads, T, T]
    teacher_maps = rng.dirichlet(np.ones(3), size=(2, 2, 2, 3)).astype("float32")
    rows = np.broadcast_to(mask[:, None, :], (2, 2, 3))
    per_layer = [(((s - t) ** 2).sum(-1) * rows).sum() / rows.sum() for s, t in zip(maps, teacher_maps)]
    np.testing.assert_allclose(float(attention_map_loss(list(maps), list(teacher_maps), mask)), np.mean(per_layer),
                               rtol=1e-5)


def test_distiller_loss_on_a_batch_equals_the_hand_computation(teacher, uci_reviews):
    """The whole objective on a batch holding labelled and unlabelled rows, from the two models' own logits:
    unlabelled rows count in the soft targets only."""
    train = named(uci_reviews[0]).head(6)
    student = student_from_teacher(teacher, layers=[1, 3])
    distiller = Distiller(teacher, student, alpha=0.3, temperature=3.0)
    examples = distiller.training_examples(train, unlabelled=uci_reviews[1]["text"].head(4))
    x, y = next(iter(student.batches(examples, with_labels=True, order=np.arange(10), batch_size=10)))
    assert x[HAS_LABEL].numpy().tolist() == [1.0] * 6 + [0.0] * 4
    loss = distiller.compute_loss(x, y, distiller(x, training=False), training=False)

    inputs = {name: x[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    student_logits = keras.ops.convert_to_numpy(student(inputs, training=False))
    teacher_logits = keras.ops.convert_to_numpy(teacher(inputs, training=False))
    labels = y.numpy()
    expected = 0.3 * hand_soft(student_logits, teacher_logits, 3.0) + \
        0.7 * hand_hard(student_logits[:6], labels[:6])
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)


def test_alpha_zero_is_plain_fine_tuning(teacher, uci_reviews):
    """Same batches, same start, no dropout: Distiller(alpha=0) takes the steps of the student's own fit."""
    train = named(uci_reviews[0])
    plain, distilled = (student_from_teacher(teacher, layers=[0, 2]) for _ in range(2))
    start = [np.copy(weight) for weight in plain.get_weights()]
    plain_history = plain.fit(train, epochs=2, batch_size=8, seed=3, verbose=0).history
    history = Distiller(teacher, distilled, alpha=0.0).fit(train, epochs=2, batch_size=8, seed=3, verbose=0).history
    np.testing.assert_allclose(history["loss"], plain_history["loss"], rtol=1e-5)
    np.testing.assert_allclose(history["hard_loss"], plain_history["loss"], rtol=1e-5)
    np.testing.assert_allclose(history["accuracy"], plain_history["accuracy"], rtol=1e-6)
    for ours, theirs in zip(distilled.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(ours, theirs, atol=2e-6)
    assert not all(np.allclose(before, after) for before, after in zip(start, plain.get_weights()))  # it trained


def test_student_from_teacher_runs_the_chosen_blocks(teacher, tiny_inputs):
    """DistilBERT's initialisation: the student computes the teacher's embeddings, the chosen blocks in turn, the
    teacher's pooler and head (a reference built by hand from the teacher's layers)."""
    for layers, expected_layers in ((None, [0, 2]), ([1, 2, 3], [1, 2, 3])):
        student = student_from_teacher(teacher, layers=layers)
        assert student.backbone.num_layers == len(expected_layers) and student.labels == teacher.labels
        source = teacher.backbone
        x = source.embedding(tiny_inputs["token_ids"], tiny_inputs["segment_ids"])
        for layer in expected_layers:
            x = source.encoder_blocks[layer](x, padding_mask=tiny_inputs["padding_mask"])
        reference = teacher.logits_layer(source.pooler(x[:, 0, :]))
        np.testing.assert_allclose(keras.ops.convert_to_numpy(student(tiny_inputs, training=False)),
                                   keras.ops.convert_to_numpy(reference), atol=1e-5)
    assert student.count_params() < teacher.count_params()
    assert not set(map(id, student.weights)) & set(map(id, teacher.weights))  # copies, not shared weights


@pytest.mark.all_backends
def test_distillation_trains_the_student_and_never_the_teacher(teacher, uci_reviews):
    """Soft targets, hidden states and attention maps on TensorFlow, JAX and torch: the loss falls, the
    student changes, the teacher's weights stay exactly as they were."""
    train = named(uci_reviews[0]).head(16)
    student = kb.BertClassifier(tiny_backbone(num_layers=2, seed=1, output_hidden_states=True, output_attentions=True),
                                teacher.preprocessor, labels=LABELS)
    teacher_before = [np.copy(w) for w in teacher.get_weights()]
    student_before = [np.copy(w) for w in student.get_weights()]
    distiller = Distiller(teacher, student, alpha=0.5, temperature=2.0, hidden_weight=1.0, attention_weight=10.0)
    history = distiller.fit(train, epochs=4, batch_size=16, learning_rate=1e-2, verbose=0).history
    assert set(history) == {"loss", "soft_loss", "hard_loss", "hidden_loss", "attention_loss", "accuracy"}
    assert history["loss"][-1] < history["loss"][0]
    for before, after in zip(teacher_before, teacher.get_weights()):
        np.testing.assert_array_equal(before, after)
    assert not all(np.array_equal(before, after) for before, after in zip(student_before, student.get_weights()))
    assert set(student.predict(train["text"], verbose=0)["label"]) <= set(LABELS)  # still an ordinary classifier


def test_distilled_student_is_an_ordinary_task(teacher, uci_reviews, tmp_path):
    train, test = named(uci_reviews[0]), named(uci_reviews[1])
    student = kb.BertClassifier(tiny_backbone(num_layers=1), teacher.preprocessor, labels=LABELS)  # not from teacher
    history = Distiller(teacher, student).fit(train, unlabelled=test[["text"]], epochs=1, batch_size=8,
                                              validation_data=test, verbose=0).history
    assert {"val_loss", "val_soft_loss", "val_hard_loss", "val_accuracy"} <= set(history)
    expected = student.predict(test["text"], verbose=0)
    student.save(tmp_path / "student.keras")
    reloaded = keras.saving.load_model(tmp_path / "student.keras")
    predicted = reloaded.predict(test["text"], verbose=0)
    assert predicted["label"].tolist() == expected["label"].tolist()
    np.testing.assert_allclose(np.stack(predicted["probabilities"]), np.stack(expected["probabilities"]), atol=1e-6)


def test_token_classifier_distils_on_first_pieces(real_preprocessor):
    teacher = kb.BertTokenClassifier(tiny_backbone(), real_preprocessor, labels=TAGS, dropout=0.0)
    student = student_from_teacher(teacher, layers=[1, 3])
    distiller = Distiller(teacher, student, alpha=0.5, temperature=2.0)

    unlabelled = ["Elizabeth Bennet walked to Meryton .", "The ministers met in Paris ."]
    examples = distiller.training_examples(tagged(), unlabelled=unlabelled)
    x, y, weight = next(iter(student.batches(examples, with_labels=True, order=np.arange(10), batch_size=10)))
    loss = distiller.compute_loss(x, y, distiller(x, training=False), weight, training=False)
    inputs = {name: x[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    student_logits = keras.ops.convert_to_numpy(student(inputs, training=False))
    teacher_logits = keras.ops.convert_to_numpy(teacher(inputs, training=False))
    first_pieces, labels = weight.numpy(), y.numpy()
    assert first_pieces[8:].sum() == 12  # the unlabelled texts' words are scored by the soft targets too
    labelled = first_pieces * x[HAS_LABEL].numpy()[:, None]
    expected = 0.5 * hand_soft(student_logits, teacher_logits, 2.0, first_pieces) + \
        0.5 * hand_hard(student_logits, labels, labelled)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)

    history = distiller.fit(tagged(), unlabelled=unlabelled, epochs=3, batch_size=10, learning_rate=1e-2,
                            verbose=0).history
    assert history["loss"][-1] < history["loss"][0]
    assert [len(tags) for tags in student.predict(unlabelled, verbose=0)["tags"]] == [6, 6]


def test_bad_input_is_named_before_any_computation(teacher, real_preprocessor):
    student = student_from_teacher(teacher)
    for arguments, problem in (({"alpha": -0.1}, "alpha must be a number in \\[0.0, 1.0\\], got -0.1"),
                               ({"alpha": 1.5}, "alpha must be a number in"),
                               ({"alpha": float("nan")}, "alpha must be a number in .*got nan"),
                               ({"temperature": 0.0}, "temperature must be a number in \\(0.0, inf\\)"),
                               ({"temperature": -2}, "temperature"),
                               ({"hidden_weight": -1.0}, "hidden_weight")):
        with pytest.raises(ValueError, match=problem):
            Distiller(teacher, student, **arguments)
    with pytest.raises(TypeError, match="alpha must be a number in .*got str '0.5'"):
        Distiller(teacher, student, alpha="0.5")

    other_labels = kb.BertClassifier(tiny_backbone(num_layers=1), real_preprocessor, labels=["neg", "pos"])
    with pytest.raises(ValueError, match=r"labels \['negative', 'positive'\] and the student's \['neg', 'pos'\] "
                                         r"differ.*labels=teacher.labels"):
        Distiller(teacher, other_labels)
    unfitted = kb.BertClassifier(tiny_backbone(num_layers=1), real_preprocessor)
    with pytest.raises(ValueError, match="teacher does not know its labels yet"):
        Distiller(unfitted, student)
    tagger = kb.BertTokenClassifier(tiny_backbone(num_layers=1), real_preprocessor, labels=LABELS)
    with pytest.raises(ValueError, match="teacher is a BertClassifier and the student a BertTokenClassifier"):
        Distiller(teacher, tagger)
    with pytest.raises(ValueError, match="output_hidden_states"):
        Distiller(teacher, student, hidden_weight=1.0)
    four_heads = kb.BertClassifier(kb.BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=4, hidden_dim=16,
                                                   intermediate_dim=32, max_sequence_length=64,
                                                   output_attentions=True), real_preprocessor, labels=LABELS)
    with pytest.raises(ValueError, match="teacher has 2 heads and the student 4"):
        Distiller(teacher, four_heads, attention_weight=1.0)
    with pytest.raises(ValueError, match="unlabelled has a 'label' column"):
        Distiller(teacher, student).fit(pd.DataFrame({"text": ["fine"], "label": ["positive"]}),
                                        unlabelled=pd.DataFrame({"text": ["bad"], "label": ["negative"]}))
    with pytest.raises(ValueError, match=r"layers must be increasing block indices in \[0, 4\)"):
        student_from_teacher(teacher, layers=[2, 1])
    with pytest.raises(ValueError, match="layers must be increasing"):
        student_from_teacher(teacher, layers=[0, 4])
