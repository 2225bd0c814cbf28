"""BertTextEncoder: all-MiniLM-L6-v2 vectors equal the sentence-transformers recipe computed with HF
transformers on the same weights (mean pooling over the attention mask, then L2 normalisation) to 1e-5; the
other poolings against numpy; `.keras` (fresh process, safe mode) and SavedModel give the same vectors."""

import textwrap

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from kerasbert.layers import SentencePooling
from kerasbert.presets.checkpoint import CheckpointError
from kerasbert.presets.sentence_transformers_format import read_sentence_transformers_settings
from kerasbert.tasks import BertTextEncoder


def sentence_transformers_recipe(minilm_path, texts):
    """The vectors of all-MiniLM-L6-v2's model card: HF tokenizer and BertModel, mean pooling, normalise."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(minilm_path))
    model = transformers.AutoModel.from_pretrained(str(minilm_path)).eval()
    encoded = tokenizer(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.no_grad():
        tokens = model(**encoded).last_hidden_state
    mask = encoded["attention_mask"].unsqueeze(-1).float()
    pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()


@pytest.fixture(scope="module")
def minilm_encoder():
    return BertTextEncoder.from_preset("all_minilm_l6_v2_en")


def test_reads_the_sentence_transformers_settings(minilm_path, minilm_encoder, tiny_preset):
    assert read_sentence_transformers_settings(minilm_path) == {"pooling": "mean", "normalize": True,
                                                                "sequence_length": 256}
    assert (minilm_encoder.pooling, minilm_encoder.normalize, minilm_encoder.sequence_length) == ("mean", True, 256)
    plain = BertTextEncoder.from_preset(tiny_preset)  # not a sentence-transformers folder: mean, not normalised
    assert (plain.pooling, plain.normalize) == ("mean", False)


def test_vectors_equal_the_sentence_transformers_recipe(minilm_path, minilm_encoder, real_sentences):
    long_text = " ".join(real_sentences[24:])  # Austen paragraphs run together: cut at 256 word pieces by both
    assert len(long_text.split()) > 256
    texts = real_sentences + [long_text, "", "Emma!", "naïve café — ÉCOLE 東京"]
    reference = sentence_transformers_recipe(minilm_path, texts)
    ours = minilm_encoder.encode(texts, batch_size=16, verbose=0)
    assert ours.shape == (len(texts), 384) and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)


def test_shorter_vectors_equal_sentence_transformers_truncate_dim(minilm_path, minilm_encoder, real_sentences):
    """`encode(dimensions=k)` against sentence-transformers' `encode(truncate_dim=k, normalize_embeddings=True)`."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(minilm_path), device="cpu")
    texts = real_sentences[:8]
    for k in (256, 64):
        reference = model.encode(texts, truncate_dim=k, normalize_embeddings=True)
        ours = minilm_encoder.encode(texts, verbose=0, dimensions=k)
        assert ours.shape == (8, k) and np.abs(ours - reference).max() < 1e-5
    for bad, error in ((0, ValueError), (385, ValueError), (1.5, TypeError)):
        with pytest.raises(error, match="dimensions"):
            minilm_encoder.encode(texts, dimensions=bad)


def test_semantic_search_finds_the_paraphrase(minilm_encoder):
    corpus = ["The battery died after an hour.", "Emma was handsome, clever and rich.", "The film was moving."]
    hits = minilm_encoder.search(["The charge did not last.", "A touching movie."], corpus, top_k=2)
    assert hits.loc[hits["rank"] == 1, "text"].tolist() == [corpus[0], corpus[2]]
    assert list(hits.columns) == ["query", "rank", "text", "corpus_index", "score"] and len(hits) == 4
    similarity = minilm_encoder.similarity(corpus, corpus)
    np.testing.assert_allclose(np.diag(similarity), 1.0, atol=1e-5)


@pytest.mark.parametrize("mode", ["mean", "cls", "max"])
def test_pooling_over_real_tokens_only(mode):
    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(2, 5, 3)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], "int32")
    pooled = np.array(SentencePooling(mode, normalize=True)(tokens, mask))
    real = [tokens[0], tokens[1, :2]]
    expected = np.stack([{"mean": t.mean(0), "cls": t[0], "max": t.max(0)}[mode] for t in real])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(pooled, expected, rtol=1e-6, atol=1e-6)


def test_saved_encoder_takes_raw_text(tiny_preset, tmp_path, fresh_python):
    """Pooling and normalisation other than the defaults survive the file and the export."""
    encoder = BertTextEncoder.from_preset(tiny_preset, pooling="max", normalize=True)
    texts = ["A wonderful, moving film.", ""]
    expected = encoder.encode(texts, verbose=0)
    encoder.save(tmp_path / "encoder.keras")
    script = textwrap.dedent(f"""
        import keras, numpy as np, kerasbert
        encoder = keras.saving.load_model({str(tmp_path / "encoder.keras")!r}, safe_mode=True)
        assert (encoder.pooling, encoder.normalize) == ("max", True)
        np.save({str(tmp_path / "v.npy")!r}, encoder.encode({texts!r}, verbose=0))
    """)
    fresh_python(script)
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), expected)
    encoder.export(tmp_path / "saved")
    served = tf.saved_model.load(str(tmp_path / "saved")).signatures["serve"](text=tf.constant(texts))
    np.testing.assert_allclose(served["embedding"].numpy(), expected, atol=1e-6)


def test_bad_input_is_named(minilm_encoder, tmp_path):
    with pytest.raises(ValueError, match=r"pooling='sum' is not one of \['mean', 'cls', 'max'\]"):
        BertTextEncoder.from_preset("all_minilm_l6_v2_en", pooling="sum")
    with pytest.raises(ValueError, match=r"rows of \(anchor, positive\[, negative\]\) or scored pairs"):
        minilm_encoder.fit({"text": ["a", "b"], "label": [0, 1]})
    with pytest.raises(ValueError, match="not usable text"):
        minilm_encoder.encode(["fine", None])
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "modules.json").write_text('[{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]')
    (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_sqrt_len_tokens": true}')
    with pytest.raises(CheckpointError, match="pass pooling=... to from_preset"):
        read_sentence_transformers_settings(tmp_path)


def test_served_encoder_returns_the_vectors(minilm_encoder):
    from starlette.testclient import TestClient

    from kerasbert.serving.app import create_app

    texts = ["A man is eating food.", ""]
    with TestClient(create_app(minilm_encoder)) as client:
        answer = client.post("/predict", json=texts)
        assert client.get("/metadata").json()["task"] == "BertTextEncoder"
    assert answer.status_code == 200
    served = np.array([row["embedding"] for row in answer.json()["predictions"]])
    np.testing.assert_allclose(served, minilm_encoder.encode(texts, verbose=0), atol=1e-6)
