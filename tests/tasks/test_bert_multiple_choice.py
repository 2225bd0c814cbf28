"""BertMultipleChoice on real text: shapes, training, HF head parity, SWAG CSV, saving, export, bad input.

Reference: HF transformers `BertForMultipleChoice` (tiny random config, CPU torch) for the logits.
"""

import shutil
import textwrap

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from kerasbert.data.batch_order import BatchOrder
from kerasbert.data.choice_batching import make_choice_dataset
from kerasbert.data.choice_examples import next_sentence_examples
from kerasbert.data.shipped import load_dataset
from kerasbert.data.swag import load_swag
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.tasks.bert_multiple_choice import BertMultipleChoice

SWAG_CSV = """\
,video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label
0,anetv_kitchen,101,"A woman cracks two eggs into a bowl. She","A woman cracks two eggs into a bowl.",She,gold,"whisks them with a fork.","climbs onto the roof.","parks the car outside.","dives into the pool.",0
1,anetv_kitchen,102,"The chef slices an onion on the board. He","The chef slices an onion on the board.",He,gen,"paints the fence green.","scrapes the pieces into a hot pan.","reads the newspaper aloud.","jumps over a hurdle.",1
2,lsmdc_garden,103,"A man kneels beside the flower bed. He","A man kneels beside the flower bed.",He,gold,"boards a train.","plays a violin solo.","pulls the weeds out by hand.","swims across the lake.",2
3,lsmdc_garden,104,"Rain starts to fall on the garden. Someone","Rain starts to fall on the garden.",Someone,gold,"lights the birthday candles.","serves the tennis ball.","types on a laptop.","runs inside with the tools.",3
"""


def tiny_model(preprocessor, **kwargs):
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=32,
                            intermediate_dim=64)
    return BertMultipleChoice(backbone, preprocessor, **kwargs)


def load_swag_text(tmp_path):
    """The hand-written SWAG CSV above, in the official layout, read by `load_swag`."""
    (tmp_path / "val.csv").write_text(SWAG_CSV, encoding="utf-8")
    return load_swag(tmp_path / "val.csv")


@pytest.fixture(scope="module")
def austen():
    """128 real next-sentence questions from Persuasion (short sentences, so the tests stay fast)."""
    return next_sentence_examples(load_dataset("jane_austen", "test"), 128, seed=0, max_words=12)


@pytest.fixture(scope="module")
def trained(real_preprocessor, austen):
    model = tiny_model(real_preprocessor)
    history = model.fit(austen, epochs=6, batch_size=16, learning_rate=3e-3, verbose=0)
    return model, history


def test_one_logit_per_choice_softmaxed_across_candidates(real_preprocessor, austen):
    model = tiny_model(real_preprocessor)
    rng = np.random.default_rng(0)
    inputs = {"token_ids": rng.integers(1000, 2000, (2, 3, 7)).astype("int32"),
              "segment_ids": np.zeros((2, 3, 7), "int32"), "padding_mask": np.ones((2, 3, 7), "int32")}
    assert tuple(model(inputs).shape) == (2, 3)

    for count in (2, 5):   # num_choices=None: any number of endings, one per call
        frame = austen.head(6).assign(endings=[row[:count] if count <= 4 else row + ["It rained."]
                                               for row in austen.head(6)["endings"]]).drop(columns="label")
        predicted = model.predict(frame, verbose=0)
        probabilities = np.stack(predicted["probabilities"])
        assert probabilities.shape == (6, count)
        np.testing.assert_allclose(probabilities.sum(1), 1.0, atol=1e-6)
        assert predicted.columns.tolist() == ["choice", "ending", "score", "probabilities"]
        chosen = [row[i] for row, i in zip(frame["endings"], predicted["choice"])]
        assert predicted["ending"].tolist() == chosen
        np.testing.assert_allclose(predicted["score"], probabilities.max(1))

    # Each candidate is scored on its own: reversing the endings reverses the probabilities.
    frame = austen.head(8)
    forward = np.stack(model.predict(frame, verbose=0)["probabilities"])
    backward = np.stack(model.predict(frame.assign(endings=[row[::-1] for row in frame["endings"]]),
                                      verbose=0)["probabilities"])
    np.testing.assert_allclose(backward, forward[:, ::-1], atol=1e-6)


def test_training_on_real_austen_examples_learns_above_chance(trained, austen):
    """A 1-layer random backbone cannot generalise from 128 examples (the recipe measures that on
    real weights); here it must fit them, which needs labels, choices and gradients lined up."""
    model, history = trained
    results = model.evaluate(austen, verbose=0)
    assert history.history["accuracy"][-1] > history.history["accuracy"][0]
    assert results["accuracy"] > 0.6 and results["loss"] < np.log(4) - 0.3, results   # chance: 0.25


def test_choice_batches_keep_examples_whole_with_dynamic_padding():
    lengths = [[3, 5], [4, 4], [9, 3], [2, 2], [17, 6]]
    flat = [list(range(1, n + 1)) for row in lengths for n in row]
    features = {"token_ids": tf.ragged.constant(flat),
                "segment_ids": tf.ragged.constant([[0] * len(ids) for ids in flat])}
    in_order = list(make_choice_dataset(features, 2, labels=[0, 1, 1, 0, 1], batch_size=2))
    assert [tuple(x["token_ids"].shape) for x, _ in in_order] == [(2, 2, 8), (2, 2, 16), (1, 2, 24)]
    masks = np.concatenate([x["padding_mask"].numpy().sum(-1) for x, _ in in_order])
    assert masks.tolist() == lengths
    assert np.concatenate([y.numpy() for _, y in in_order]).tolist() == [0, 1, 1, 0, 1]

    grouped = make_choice_dataset(features, 2, labels=[0, 1, 1, 0, 1], batch_size=2,
                                  batch_order=BatchOrder(shuffle=True, seed=0, group_by_length=True))
    batches = list(grouped)
    assert len(batches) == int(grouped.cardinality()) == 3   # as without grouping
    grouped_lengths = np.concatenate([x["padding_mask"].numpy().sum(-1) for x, _ in batches])
    assert sorted(grouped_lengths.tolist()) == sorted(lengths)


def test_hf_multiple_choice_head_loads_and_matches_transformers(tmp_path, minilm_path, austen):
    torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    reference = transformers.BertForMultipleChoice(config).eval()
    with torch.no_grad():  # non-trivial biases, so that a mapping mistake shows
        for parameter in reference.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    reference.save_pretrained(tmp_path)
    for name in ("vocab.txt", "tokenizer_config.json"):
        shutil.copy(f"{minilm_path}/{name}", tmp_path / name)

    model = BertMultipleChoice.from_preset(str(tmp_path), sequence_length=24)
    examples = next_sentence_examples(load_dataset("jane_austen", "test"), 6, seed=3)   # long: truncated
    ours, _ = model.predict_outputs(examples, verbose=0)

    tokenizer = transformers.BertTokenizerFast.from_pretrained(minilm_path)
    firsts = [context for context, endings in zip(examples["context"], examples["endings"]) for _ in endings]
    seconds = [ending for endings in examples["endings"] for ending in endings]
    encoded = tokenizer(firsts, seconds, truncation=True, max_length=24, padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = reference(**{k: v.view(6, 4, -1) for k, v in encoded.items()}).logits.numpy()
    assert encoded["input_ids"].shape[-1] == 24
    assert np.abs(ours - expected).max() <= 1e-4


def test_swag_csv_fits_and_predicts(tmp_path, real_preprocessor):
    swag = load_swag_text(tmp_path)
    model = tiny_model(real_preprocessor)
    model.fit(swag, epochs=1, batch_size=2, verbose=0)
    assert model.uses_question   # the second segment is sent2 + ending, as HF run_swag.py builds it

    prepared = model.prepare(swag, with_labels=True)
    row = swag.iloc[1]
    packed = real_preprocessor(([row.context], [f"{row.question} {row.endings[3]}"]))
    second_row_last_choice = prepared.features["token_ids"][1 * 4 + 3]
    assert second_row_last_choice.numpy().tolist() == packed["token_ids"][0].numpy().tolist()

    predicted = model.predict(swag.drop(columns="label"), verbose=0)
    assert predicted["ending"].tolist() == [e[i] for e, i in zip(swag["endings"], predicted["choice"])]
    results = model.evaluate(swag, verbose=0, return_errors=True)
    assert set(results) == {"loss", "accuracy", "errors"}
    assert len(results["errors"]) == round((1 - results["accuracy"]) * 4)
    assert {"context", "endings", "label", "predicted_choice"} <= set(results["errors"].columns)
    with pytest.raises(ValueError, match="trained with questions"):
        model.predict(swag.drop(columns="question"), verbose=0)


def test_saved_model_predicts_the_same_in_a_fresh_process(trained, austen, tmp_path, fresh_python):
    model, _ = trained
    raw = austen.drop(columns="label").head(20)
    expected = model.predict(raw, verbose=0)
    model.save(tmp_path / "choice.keras")
    raw.to_pickle(tmp_path / "raw.pkl")
    script = textwrap.dedent(f"""
        import keras, pandas as pd, kerasbert
        model = keras.saving.load_model({str(tmp_path / "choice.keras")!r})
        raw = pd.read_pickle({str(tmp_path / "raw.pkl")!r})
        model.predict(raw, verbose=0).to_pickle({str(tmp_path / "out.pkl")!r})
    """)
    fresh_python(script)
    reloaded = pd.read_pickle(tmp_path / "out.pkl")
    pd.testing.assert_frame_equal(reloaded.drop(columns="probabilities"),
                                  expected.drop(columns="probabilities"), check_exact=True)
    np.testing.assert_array_equal(np.stack(reloaded["probabilities"]), np.stack(expected["probabilities"]))


def test_exported_savedmodel_serves_raw_strings(trained, austen, tmp_path, fresh_python):
    model, _ = trained
    rows = austen.head(5)
    expected = model.predict(rows, verbose=0)
    model.export(tmp_path / "served")
    script = textwrap.dedent(f"""
        import numpy as np, tensorflow as tf, tensorflow_text  # no kerasbert, no keras model code
        served = tf.saved_model.load({str(tmp_path / "served")!r})
        out = served.signatures["serve"](context=tf.constant({rows["context"].tolist()!r}),
                                         endings=tf.constant({[list(e) for e in rows["endings"]]!r}))
        np.save({str(tmp_path / "p.npy")!r}, out["probabilities"].numpy())
        np.save({str(tmp_path / "choice.npy")!r}, out["choice"].numpy())
    """)
    fresh_python(script, imports=("tensorflow", "tensorflow_text"))
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), np.stack(expected["probabilities"]), atol=1e-6)
    assert np.load(tmp_path / "choice.npy").tolist() == expected["choice"].tolist()


def test_serving_signature_and_serve_with_questions(tmp_path, real_preprocessor):
    swag = load_swag_text(tmp_path)
    model = tiny_model(real_preprocessor, num_choices=4, uses_question=True)
    assert [(s.name, s.shape.as_list()) for s in model.serving_signature()] == [
        ("context", [None]), ("endings", [None, 4]), ("question", [None])]
    served = model.serve(tf.constant(swag["context"].tolist()), tf.constant(swag["endings"].tolist()),
                         tf.constant(swag["question"].tolist()))
    expected = model.predict(swag, verbose=0)
    np.testing.assert_allclose(served["probabilities"].numpy(), np.stack(expected["probabilities"]),
                               atol=1e-6)
    assert [e.decode() for e in served["ending"].numpy()] == expected["ending"].tolist()


BAD_INPUTS = [
    ("no endings column", lambda f: f.drop(columns="endings"), "Column 'endings' not found"),
    ("no label column", lambda f: f.drop(columns="label"), "Column 'label' not found"),
    ("missing context", lambda f: f.assign(context=[None] + f["context"].tolist()[1:]),
     "Column 'context' (columns['context'])"),
    ("NaN ending", lambda f: with_ending(f, 2, 1, np.nan),
     "Row 2 of column 'endings': ending 1 (nan) is missing"),
    ("empty ending", lambda f: with_ending(f, 3, 0, "  "),
     "Row 3 of column 'endings': ending 0 ('  ') is empty"),
    ("ending not text", lambda f: with_ending(f, 1, 2, 7), "ending 2 (7) is a int, not str"),
    ("endings not a list", lambda f: f.assign(endings=["one ending"] + f["endings"].tolist()[1:]),
     "must hold a list of endings per row; row 0"),
    ("one ending", lambda f: f.assign(endings=[["Only this."]] * len(f)),
     "has 1 ending(s); it needs at least 2 per row"),
    ("different counts", lambda f: f.assign(endings=f["endings"].tolist()[:4] + [f["endings"].iloc[4][:3]]),
     "Row 4 of column 'endings' has 3 endings, but row 0 has 4"),
    ("label out of range", lambda f: f.assign(label=[0, 1, 4, 2, 3]),
     "row 2 holds 4, not an index into its 4 endings"),
    ("negative label", lambda f: f.assign(label=[0, 1, -1, 2, 3]), "row 2 holds -1"),
    ("missing label", lambda f: f.assign(label=[0, np.nan, 1, 2, 3]), "row 1 holds nan, a missing label"),
    ("fractional label", lambda f: f.assign(label=[0, 1.5, 1, 2, 3]), "row 1 holds 1.5"),
]


def snapshot(frame):
    """A copy that also copies the lists in cells (`DataFrame.copy(deep=True)` shares them)."""
    return frame.map(lambda value: list(value) if isinstance(value, list) else value)


def with_ending(frame, row, index, value):
    endings = [list(e) for e in frame["endings"]]
    endings[row][index] = value
    return frame.assign(endings=endings)


@pytest.mark.parametrize("case, corrupt, message", BAD_INPUTS, ids=[case[0] for case in BAD_INPUTS])
def test_bad_input_is_reported_before_computation(real_preprocessor, austen, case, corrupt, message):
    model = tiny_model(real_preprocessor)
    model.pack_texts = lambda *args: pytest.fail("tokenised before validating")
    frame = corrupt(austen.head(5).drop(columns=["book", "chapter"]))
    before = snapshot(frame)
    with pytest.raises(ValueError) as error:
        model.evaluate(frame, verbose=0)
    assert message in str(error.value)
    pd.testing.assert_frame_equal(frame, before)


def test_fixed_num_choices_and_question_columns_are_enforced(real_preprocessor, austen):
    model = tiny_model(real_preprocessor, num_choices=4)
    three = austen.head(3).assign(endings=[e[:3] for e in austen.head(3)["endings"]])
    with pytest.raises(ValueError, match="Row 0 of column 'endings' has 3 endings, but this model takes "
                                         "num_choices=4"):
        model.predict(three, verbose=0)
    with pytest.raises(ValueError, match="num_choices must be an int of at least 2"):
        tiny_model(real_preprocessor, num_choices=1)

    trained_without_questions = tiny_model(real_preprocessor, uses_question=False)
    with pytest.raises(ValueError, match="has a 'question' column, but this model was trained without"):
        trained_without_questions.predict(austen.head(2).assign(question="She"), verbose=0)


def test_the_users_dataframe_is_never_modified(trained, austen):
    model, _ = trained
    frame = austen.head(10).set_index(np.arange(100, 110))
    before = snapshot(frame)
    predicted = model.predict(frame, verbose=0)
    model.evaluate(frame, verbose=0, return_errors=True)
    pd.testing.assert_frame_equal(frame, before)
    assert predicted.index.tolist() == list(range(100, 110))
