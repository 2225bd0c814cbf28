"""TEI's and OpenAI's routes on a running server (uvicorn on loopback): the official clients (`openai`'s
`embeddings.create`, `huggingface_hub.InferenceClient(base_url).feature_extraction`) get the vectors `encode`
gives; `/embed` takes TEI's options; `/rerank` orders as `rank`; bad requests are answered and the server keeps
serving."""

import base64

import httpx
import numpy as np
import pandas as pd
import pytest

from kerasbert.data.shipped import load_dataset
from kerasbert.serving import ServingLimits, create_app
from kerasbert.serving.embedding_routes import TokenCounter
from kerasbert.tasks import BertCrossEncoder, BertTextEncoder

TEXTS = ["A man is eating food.", "The battery died after an hour.", "Not what I expected, sadly."]


@pytest.fixture(scope="module")
def encoder(tiny_preset):
    """A tiny encoder that normalises (as all-MiniLM-L6-v2): what the routes return is what `encode` gives."""
    return BertTextEncoder.from_preset(tiny_preset, sequence_length=32, normalize=True)


@pytest.fixture(scope="module")
def served_encoder(encoder, serve_in_thread):
    with serve_in_thread(create_app(encoder, ServingLimits(max_inputs=8), model_id="minilm")) as url:
        yield url


def test_official_clients_get_the_vectors_encode_gives(encoder, served_encoder):
    from huggingface_hub import InferenceClient
    from openai import OpenAI

    expected = encoder.encode(TEXTS, verbose=0)
    client = OpenAI(base_url=f"{served_encoder}/v1", api_key="unused")
    answer = client.embeddings.create(input=TEXTS, model="minilm")  # the client asks for base64 and decodes it
    np.testing.assert_allclose([row.embedding for row in answer.data], expected, atol=1e-5)
    assert [row.index for row in answer.data] == [0, 1, 2] and answer.model == "minilm"
    as_floats = client.embeddings.create(input=TEXTS, model="minilm", encoding_format="float")
    np.testing.assert_allclose([row.embedding for row in as_floats.data], expected, atol=1e-5)
    as_base64 = client.embeddings.create(input=TEXTS, model="minilm", encoding_format="base64")
    np.testing.assert_allclose([np.frombuffer(base64.b64decode(row.embedding), "<f4") for row in as_base64.data],
                               expected, atol=1e-5)
    assert answer.usage.prompt_tokens == int(encoder.tokenizer(TEXTS).row_lengths().numpy().sum()) + 2 * 3
    short = client.embeddings.create(input=TEXTS[0], model="minilm", dimensions=8)
    np.testing.assert_allclose(short.data[0].embedding, encoder.encode(TEXTS[:1], dimensions=8, verbose=0)[0],
                               atol=1e-5)
    vectors = InferenceClient(base_url=served_encoder).feature_extraction(TEXTS[1])
    np.testing.assert_allclose(vectors, expected[1:2], atol=1e-5)


def test_tei_embed_takes_its_options(encoder, served_encoder):
    expected = encoder.encode(TEXTS, verbose=0)
    answer = httpx.post(f"{served_encoder}/embed", json={"inputs": TEXTS}).json()
    np.testing.assert_allclose(answer, expected, atol=1e-5)
    cut = httpx.post(f"{served_encoder}/embed", json={"inputs": TEXTS[0], "dimensions": 8}).json()
    np.testing.assert_allclose(cut, encoder.encode(TEXTS[:1], dimensions=8, verbose=0), atol=1e-5)
    raw_cut = httpx.post(f"{served_encoder}/embed", json={"inputs": TEXTS, "dimensions": 8, "normalize": False})
    assert raw_cut.status_code == 200, raw_cut.text  # the first 8 values of each vector, not renormalised
    np.testing.assert_allclose(raw_cut.json(), expected[:, :8], atol=1e-5)
    long_text = " ".join(["word"] * 40)
    refused = httpx.post(f"{served_encoder}/embed", json={"inputs": [long_text]})
    assert refused.status_code == 413 and "must have less than 32 tokens. Given: 42" in refused.json()["error"]
    cut_text = httpx.post(f"{served_encoder}/embed", json={"inputs": [long_text], "truncate": True}).json()
    np.testing.assert_allclose(cut_text, encoder.encode([long_text], verbose=0), atol=1e-5)
    tokens = httpx.post(f"{served_encoder}/tokenize", json={"inputs": "Ångström is naïve!"}).json()
    assert [(t["text"], t["special"], t["start"]) for t in tokens[0]] == [
        ("[CLS]", True, None), ("Ång", False, 0), ("ström", False, 3), ("is", False, 9), ("naïve", False, 12),
        ("!", False, 17), ("[SEP]", True, None)]
    assert [t["id"] for t in tokens[0][1:-1]] == encoder.tokenizer(["Ångström is naïve!"]).to_list()[0]
    info = httpx.get(f"{served_encoder}/info").json()
    assert info["model_type"] == {"embedding": {"pooling": "mean"}} and info["max_input_length"] == 32


@pytest.mark.parametrize("route, body, status, message", [
    ("/embed", {"inputs": []}, 422, "`inputs` must be a text or a non-empty list of texts"),
    ("/embed", {"inputs": ["a"] * 9}, 413, "batch size 9 > maximum allowed batch size 8"),
    ("/embed", {"inputs": "a", "dimensions": 0}, 422, "`dimensions` must be a positive integer"),
    ("/embed", {"inputs": "a", "dimensions": 999}, 422, "more than the model's 16"),
    ("/embed", ["a"], 422, "must be a JSON object"),
    ("/v1/embeddings", {"input": [1, 2]}, 422, "`input` must be a text or a non-empty list of texts"),
    ("/v1/embeddings", {"input": "a", "encoding_format": "int8"}, 422, "'float' or 'base64'"),
])
def test_bad_requests_are_answered_and_the_server_keeps_serving(served_encoder, route, body, status, message):
    answer = httpx.post(served_encoder + route, json=body)
    error = answer.json()["error"]
    assert answer.status_code == status and message in (error["message"] if route.startswith("/v1") else error)
    assert httpx.post(f"{served_encoder}/embed", json={"inputs": "still here"}).status_code == 200


def test_rerank_orders_as_rank(tiny_preset, serve_in_thread):
    reranker = BertCrossEncoder.from_preset(tiny_preset)
    query, passages = "Is the battery any good?", TEXTS
    expected = reranker.rank(query, passages)
    with serve_in_thread(create_app(reranker)) as url:
        answer = httpx.post(f"{url}/rerank", json={"query": query, "texts": passages, "return_text": True}).json()
        raw = httpx.post(f"{url}/", json={"query": query, "texts": passages, "raw_scores": True}).json()
    assert [hit["index"] for hit in answer] == expected["corpus_index"].tolist()
    np.testing.assert_allclose([hit["score"] for hit in answer], expected["score"], atol=1e-6)
    assert [hit["text"] for hit in answer] == expected["passage"].tolist()
    logits = reranker.predict(pd.DataFrame({"query": [query] * 3, "passage": passages}), verbose=0)["logit"]
    np.testing.assert_allclose([hit["score"] for hit in raw], logits.to_numpy()[[hit["index"] for hit in raw]],
                               atol=1e-6)


def test_token_counts_in_rust_equal_the_tensorflow_tokenizers(encoder, monkeypatch):
    """The server counts a request's tokens (TEI's limits and token budget, OpenAI's `usage`) with HF `tokenizers`
    where the tokenizer has a Rust equivalent; TensorFlow's count is the reference."""
    texts = load_dataset("uci_sentiment", "test")["text"].tolist()[:300] + ["", "[SEP] inside", "naïve café 中文",
                                                                              "x" * 150, "a\u200bb \x00c"]
    rust = TokenCounter(encoder.tokenizer)
    monkeypatch.setattr(TokenCounter, "_rust", staticmethod(lambda tokenizer: None))
    np.testing.assert_array_equal(rust(texts), TokenCounter(encoder.tokenizer)(texts))
    assert rust(texts).min() == 2 and rust(["x" * 150])[0] == 2 + 1  # too long a word: one [UNK]
