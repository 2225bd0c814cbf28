"""BertCrossEncoder: scores equal sentence-transformers' CrossEncoder.predict on the same weights (a CrossEncoder
folder as sentence-transformers saves it: the real MiniLM with a seeded head), with either activation; `rank`
orders as CrossEncoder.rank; the training losses are their definitions and fall (what training
gains on real data: applications/retrieval_squad.py); `.keras` and SavedModel give the same scores; bad input is named."""

import json
import textwrap

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from kerasbert.data.shipped import load_dataset
from kerasbert.presets.sentence_transformers_format import read_cross_encoder_activation
from kerasbert.tasks import BertCrossEncoder


@pytest.fixture(scope="module")
def cross_encoder_folder(minilm_path, tmp_path_factory):
    """all-MiniLM-L6-v2 as a sentence-transformers CrossEncoder (one label, a seeded random head), saved."""
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("cross_encoder")
    CrossEncoder(str(minilm_path), num_labels=1, device="cpu").save(str(folder))
    return folder


@pytest.fixture(scope="module")
def reviews():
    return [text for text in load_dataset("uci_sentiment", "test")["text"] if len(text.split()) >= 12][:24]


def test_scores_and_ranks_equal_sentence_transformers(cross_encoder_folder, reviews):
    import torch
    from sentence_transformers import CrossEncoder

    query = "Is the battery any good?"
    passages = reviews[:6] + [" ".join(reviews * 2)]  # the last one cut at 512 tokens by both
    pairs = pd.DataFrame({"query": [query] * len(passages), "passage": passages})
    reference = CrossEncoder(str(cross_encoder_folder), device="cpu")
    reranker = BertCrossEncoder.from_preset(cross_encoder_folder)
    for activation in ("sigmoid", "identity"):
        if activation == "identity":  # as the MS MARCO cross-encoders name it, in the file from_preset reads
            settings = json.loads((cross_encoder_folder / "config_sentence_transformers.json").read_text())
            settings["activation_fn"] = "torch.nn.modules.linear.Identity"
            (cross_encoder_folder / "config_sentence_transformers.json").write_text(json.dumps(settings))
            assert read_cross_encoder_activation(cross_encoder_folder) == "identity"
            reference.activation_fn, reranker.activation = torch.nn.Identity(), "identity"
        assert reranker.activation == activation
        expected = reference.predict(list(zip(pairs["query"], pairs["passage"])))
        ours = reranker.predict(pairs, verbose=0)["score"].to_numpy()
        np.testing.assert_allclose(ours, expected, atol=1e-5)
        ranked = reranker.rank(query, passages, top_k=4)
        assert ranked["corpus_index"].tolist() == [hit["corpus_id"] for hit in reference.rank(query, passages)][:4]
        assert ranked["rank"].tolist() == [1, 2, 3, 4] and ranked["passage"][0] == passages[ranked["corpus_index"][0]]


def listwise_rows(reviews):
    """Each review's first five words as the query, the review the positive, two other reviews the negatives."""
    return pd.DataFrame({"query": [" ".join(text.split()[:5]) for text in reviews], "positive": reviews,
                         "negative": [[reviews[(i + 7) % len(reviews)], reviews[(i + 13) % len(reviews)]]
                                      for i in range(len(reviews))]})


def log_sum_exp(x):
    return np.log(np.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1)) + x.max(axis=1)


@pytest.fixture(scope="module")
def untrained_tiny_reranker(tmp_path_factory):
    """A function giving a fresh tiny reranker: one block of width 16 drawn at std 0.2, dropout off. At the usual std
    0.02 a random encoder's [CLS] output hardly depends on its input (logits equal to 1e-6), so the loss would have
    nothing to follow."""
    from kerasbert.families.bert.bert_backbone import BertBackbone
    from kerasbert.families.bert.bert_tokenizer import BertTokenizer

    folder = tmp_path_factory.mktemp("spread_tiny_preset")
    keras.utils.set_random_seed(0)
    BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                 max_sequence_length=64, initializer_range=0.2).save_to_preset(
        folder, tokenizer=BertTokenizer.from_preset("all_minilm_l6_v2_en"))

    def untrained():
        keras.utils.set_random_seed(0)  # the head's initial weights
        return BertCrossEncoder.from_preset(folder, dropout=0.0,
                                            backbone_overrides={"dropout": 0.0, "attention_dropout": 0.0})
    return untrained


def test_listwise_loss_is_its_definition_and_falls(untrained_tiny_reranker, reviews):
    """One batch of 8 real rows, 6 steps: the first step's loss is the softmax cross-entropy of each query's positive
    among its passages, from the model's own logits in numpy, and the loss falls."""
    reranker = untrained_tiny_reranker()
    rows = listwise_rows(reviews[:8])
    logits, _ = reranker.predict_outputs(rows, with_labels=True, verbose=0)  # [8 queries, 3 passages]
    expected = np.mean(log_sum_exp(logits) - logits[:, 0])
    losses = reranker.fit(rows, epochs=6, batch_size=8, learning_rate=1e-2, verbose=0).history["loss"]
    assert losses[0] == pytest.approx(expected, abs=1e-5), losses
    assert np.all(np.diff(losses[1:]) < 0), losses  # after the warm-up step (rate 0), every step lowers it


def test_pointwise_loss_is_binary_cross_entropy_and_falls(untrained_tiny_reranker, reviews):
    reranker = untrained_tiny_reranker()
    rows = listwise_rows(reviews[:8])
    pointwise = pd.DataFrame({"query": list(rows["query"]) * 2, "passage": list(rows["positive"]) + reviews[8:16],
                              "label": [1.0] * 8 + [0.0] * 8})
    logits = reranker.predict_outputs(pointwise, with_labels=True, verbose=0)[0][:, 0]
    labels = pointwise["label"].to_numpy()
    expected = np.mean(np.logaddexp(0, logits) - labels * logits)
    losses = reranker.fit(pointwise, epochs=6, batch_size=16, learning_rate=3e-3, verbose=0).history["loss"]
    assert losses[0] == pytest.approx(expected, abs=1e-5), losses
    assert losses[-1] < losses[0] - 5e-3, losses  # (on 16 rows it falls unevenly; 0.69 -> 0.68 on each backend)


def test_keras_file_and_savedmodel_give_the_same_scores(tiny_preset, reviews, tmp_path, fresh_python):
    reranker = BertCrossEncoder.from_preset(tiny_preset, activation="identity")
    pairs = pd.DataFrame({"query": ["Is the battery any good?", "Would you eat here?"], "passage": reviews[:2]})
    expected = reranker.predict(pairs, verbose=0)["score"].to_numpy()
    reranker.save(tmp_path / "reranker.keras")
    fresh_python(textwrap.dedent(f"""
        import keras, numpy as np, pandas as pd, kerasbert
        reranker = keras.saving.load_model({str(tmp_path / "reranker.keras")!r}, safe_mode=True)
        pairs = pd.DataFrame({pairs.to_dict("list")!r})
        np.save({str(tmp_path / "scores.npy")!r}, reranker.predict(pairs, verbose=0)["score"].to_numpy())
    """))
    np.testing.assert_array_equal(np.load(tmp_path / "scores.npy"), expected)  # logits: the activation is kept
    reranker.export(tmp_path / "saved")
    serve = tf.saved_model.load(str(tmp_path / "saved")).signatures["serve"]
    served = serve(query=tf.constant(pairs["query"].tolist()), passage=tf.constant(pairs["passage"].tolist()))
    np.testing.assert_allclose(served["score"].numpy(), expected, atol=1e-6)


@pytest.fixture(scope="module")
def tiny_reranker(tiny_preset):
    return BertCrossEncoder.from_preset(tiny_preset)


@pytest.mark.parametrize("call, message", [
    (lambda r: r.fit(pd.DataFrame({"query": ["a"], "passage": ["b"]})), "Column 'label' not found"),
    (lambda r: r.fit(pd.DataFrame({"query": ["a", "b"], "passage": ["b", "c"], "label": [1, 3]})),
     "values out of \\[0, 1\\], e.g. 3.0"),
    (lambda r: r.fit(pd.DataFrame({"query": ["a"], "positive": ["b"], "negative": [[]]})), "has 0 negative"),
    (lambda r: r.predict(pd.DataFrame({"query": ["a"], "doc": ["b"]})), "Column 'passage' not found"),
    (lambda r: r.rank(["a", "b"], ["c"]), "rank takes one query"),
    (lambda r: r.rank("a", ["c"], top_k=0), "top_k"),
    (lambda r: BertCrossEncoder(r.backbone, r.preprocessor, activation="softmax"), "activation='softmax'"),
])
def test_bad_input_is_named(tiny_reranker, call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call(tiny_reranker)
