"""The routes clients of embedding servers already speak: Hugging Face Text Embeddings Inference (TEI) and OpenAI's
embeddings API, for a `BertTextEncoder`, TEI's reranking for a `BertCrossEncoder` and TEI's `/predict` for a
`BertClassifier` (`kerasbert.serving.tei_predict`).

- `POST /embed` (TEI): `{"inputs": text or [texts], "normalize": true, "truncate": false, "dimensions": null}`
  -> `[[float, ...], ...]`. `normalize=false` gives the model's own vectors (a model that normalises, as
  all-MiniLM-L6-v2 does, gives unit vectors either way).
- `POST /v1/embeddings` (OpenAI): `{"input": text or [texts], "model", "encoding_format": "float" | "base64",
  "dimensions"}` -> `{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}`.
- `POST /rerank` (TEI): `{"query", "texts", "return_text": false, "raw_scores": false, "truncate": false}` ->
  `[{"index", "score"(, "text")}]`, best first.
- `POST /` (TEI's route for its clients, e.g. `huggingface_hub.InferenceClient(base_url).feature_extraction`):
  `/embed` for an encoder, `/rerank` for a reranker, TEI's `/predict` for a classifier. `GET /info` (TEI): the
  model and the server's limits.
- `POST /tokenize` (TEI): `{"inputs": text or [texts], "add_special_tokens": true}` -> per text, its tokens
  `{"id", "text", "special", "start", "stop"}` (`start`/`stop`: character offsets into the text; none for
  `[CLS]` and `[SEP]`).

A text longer than the model's tokens is an error (413) unless `truncate` is true, as TEI; OpenAI requests are
truncated. Errors are `{"error", "error_type"}` (TEI) or `{"error": {"message", "type", "param", "code"}}` (OpenAI).

Examples:
    >>> routes = embedding_routes(encoder, batcher, limits, model_id="all-MiniLM-L6-v2")
"""

import base64

import numpy as np
import pandas as pd
import tensorflow as tf
from starlette.responses import JSONResponse
from starlette.routing import Route

from kerasbert.data.native_reading import rust_tokenizer_of
from kerasbert.retrieval.exact_index import unit_rows
from kerasbert.serving.json_routes import (
    RouteError,
    budget_tokens,
    check_lengths,
    json_route,
    option,
    texts_of,
)
from kerasbert.serving.tei_predict import tei_predict


class TokenCounter:
    """`counter(texts)`: the tokens of each text with `[CLS]` and `[SEP]`, before truncation. In HF `tokenizers`
    (Rust, 0.04 ms for a review) where the tokenizer has a Rust equivalent (`rust_tokenizer()`) and `tokenizers` is
    installed, else in one traced TensorFlow function called as its concrete function (0.6 ms); the counts are
    the same (`kerasbert.data.native_reading`'s tests: equal ids).

    Examples:
        >>> TokenCounter(model.tokenizer)(["A man is eating food."])
        array([8])
    """

    def __init__(self, tokenizer):
        rust = self._rust(tokenizer)
        if rust is not None:
            self.count = lambda texts: np.fromiter(
                (len(encoding.ids) + 2 for encoding in rust.encode_batch_fast(texts, add_special_tokens=False)),
                np.int64, len(texts))
        else:
            traced = tf.function(lambda texts: tokenizer(texts).row_lengths() + 2, autograph=False,
                                 input_signature=[tf.TensorSpec([None], tf.string)]).get_concrete_function()
            self.count = lambda texts: traced(tf.constant(texts, tf.string)).numpy()

    _rust = staticmethod(rust_tokenizer_of)

    def __call__(self, texts):
        return self.count(list(texts))


def vectors_of(predictions, dimensions, normalize, width):
    vectors = np.stack(predictions["embedding"].to_numpy()).astype(np.float32)
    if dimensions is not None:
        if dimensions > width:
            raise RouteError(422, f"`dimensions` {dimensions} is more than the model's {width}.", param="dimensions")
        vectors = vectors[:, :dimensions]
    return unit_rows(vectors) if normalize else vectors


def embedding_routes(model, batcher, limits, model_id, count_tokens):
    """The TEI and OpenAI routes `model` (a `BertTextEncoder`, `BertCrossEncoder` or `BertClassifier`) answers (see
    the module docstring); `batcher` predicts DataFrames in micro-batches, `count_tokens` is the model's
    `TokenCounter`."""
    keras_task = getattr(model, "keras_task", model)  # an OnnxTask's settings are its Keras task's
    task = type(keras_task).__name__
    width = keras_task.backbone.hidden_dim

    async def predictions(frame, counts):
        """The batcher's predictions of `frame`, whose texts take `counts` tokens (counted once per request)."""
        return await batcher.predict(frame, tokens=budget_tokens(counts, model.sequence_length))

    async def embed(body):
        texts = texts_of(body.get("inputs"), "inputs", limits)
        counts = count_tokens(texts)
        check_lengths(counts, model, option(body, "truncate", bool, False))
        vectors = vectors_of(await predictions(pd.DataFrame({model.columns["text"]: texts}), counts),
                             option(body, "dimensions", int, None), option(body, "normalize", bool, True), width)
        return vectors

    async def openai_embeddings(body):
        texts = texts_of(body.get("input"), "input", limits)
        encoding = option(body, "encoding_format", str, "float")
        if encoding not in ("float", "base64"):
            raise RouteError(422, f"`encoding_format` must be 'float' or 'base64'; got {encoding!r}.",
                             param="encoding_format")
        counts = np.minimum(count_tokens(texts), model.sequence_length)
        vectors = vectors_of(await predictions(pd.DataFrame({model.columns["text"]: texts}), counts),
                             option(body, "dimensions", int, None), keras_task.normalize, width)
        data = [{"object": "embedding", "index": i,
                 "embedding": base64.b64encode(vector.astype("<f4").tobytes()).decode() if encoding == "base64"
                 else vector} for i, vector in enumerate(vectors)]
        return {"object": "list", "data": data, "model": body.get("model") or model_id,
                "usage": {"prompt_tokens": int(counts.sum()), "total_tokens": int(counts.sum())}}

    async def rerank(body):
        query = body.get("query")
        if not isinstance(query, str) or not query:
            raise RouteError(422, "`query` must be a non-empty text.", param="query")
        texts = texts_of(body.get("texts"), "texts", limits)
        pair_tokens = count_tokens([query])[0] + count_tokens(texts) - 1  # [CLS] q [SEP] t [SEP]
        check_lengths(pair_tokens, model, option(body, "truncate", bool, False))
        frame = pd.DataFrame({model.columns["query"]: [query] * len(texts), model.columns["passage"]: texts})
        scored = await predictions(frame, pair_tokens)
        scores = scored["logit" if option(body, "raw_scores", bool, False) else "score"].to_numpy()
        with_text = option(body, "return_text", bool, False)
        return [{"index": int(i), "score": float(scores[i]), **({"text": texts[i]} if with_text else {})}
                for i in np.argsort(-scores, kind="stable")]

    async def tokenize(body):
        texts = texts_of(body.get("inputs"), "inputs", limits)
        special = option(body, "add_special_tokens", bool, True)
        tokenizer = model.tokenizer
        ids, starts, ends = (part.to_list() for part in tokenizer.tokenize_with_offsets(texts))

        def marker(token_id):
            return {"id": token_id, "text": tokenizer.id_to_token(token_id), "special": True, "start": None,
                    "stop": None}

        return [([marker(tokenizer.cls_token_id)] if special else [])
                + [{"id": i, "text": text[a:b], "special": False, "start": a, "stop": b}
                   for i, a, b in zip(row_ids, row_starts, row_ends)]
                + ([marker(tokenizer.sep_token_id)] if special else [])
                for text, row_ids, row_starts, row_ends in zip(texts, ids, starts, ends)]

    def info():
        if task == "BertTextEncoder":
            kind = {"embedding": {"pooling": keras_task.pooling}}
        else:
            names = [str(label) for label in model.labels or ["LABEL_0"]] if task == "BertClassifier" else ["LABEL_0"]
            kind = {"classifier" if task == "BertClassifier" else "reranker": {
                "id2label": {str(i): name for i, name in enumerate(names)},
                "label2id": {name: i for i, name in enumerate(names)}}}
        return {"model_id": model_id, "model_sha": None, "model_dtype": keras_task.dtype_policy.compute_dtype,
                "model_type": kind, "max_concurrent_requests": limits.max_inputs,
                "max_input_length": model.sequence_length, "max_batch_tokens": limits.max_batch_tokens,
                "max_client_batch_size": limits.max_inputs, "tokenization_workers": 1, "version": "kerasbert"}

    routes = [Route("/info", lambda request: JSONResponse(info())),
              Route("/tokenize", json_route(tokenize), methods=["POST"])]
    if task == "BertTextEncoder":
        routes += [Route("/embed", json_route(embed), methods=["POST"]),
                   Route("/v1/embeddings", json_route(openai_embeddings, openai=True), methods=["POST"]),
                   Route("/", json_route(embed), methods=["POST"])]
    elif task == "BertCrossEncoder":
        routes += [Route("/rerank", json_route(rerank), methods=["POST"]),
                   Route("/", json_route(rerank), methods=["POST"])]
    elif task == "BertClassifier":  # its /predict answers TEI's bodies in kerasbert.serving.app
        routes.append(Route("/", json_route(tei_predict(model, batcher, limits, count_tokens)), methods=["POST"]))
    return routes

