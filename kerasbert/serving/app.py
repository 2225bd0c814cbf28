"""The starlette app behind `kerasbert serve`: POST /predict, GET /health, GET /metadata, GET /metrics (Prometheus:
`kerasbert.serving.metrics`), GET /openapi.json (`kerasbert.serving.openapi`) and, for a text encoder or a
reranker, TEI's and OpenAI's routes (`kerasbert.serving.embedding_routes`).

`POST /predict` takes a JSON list of inputs, or `{"inputs": [...]}`: texts (`["a lovely film"]`), text
pairs (`[["question", "answer"]]`), or objects with the model's columns (`[{"question": ..., "context":
...}]`); `{"inputs": [...], "columns": {"text": "body"}}` names the fields that hold the model's roles. It
answers `{"predictions": [...]}`, one record per input, as `predict` returns them. A classifier also answers
TEI's `{"inputs": text, pair or [texts or pairs]}` in TEI's shape (`kerasbert.serving.tei_predict`).
Errors: malformed JSON 400; too many inputs or too long a text 413; inputs the model refuses 422 (the
message says why); the server keeps serving.

Examples:
    >>> app = create_app(keras.saving.load_model("sentiment.keras"))
    >>> uvicorn.run(app, host="127.0.0.1", port=8000)
"""

import asyncio
import contextlib
import dataclasses
import json
import time

import pandas as pd
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from kerasbert.doors import entered_through
from kerasbert.json_records import records
from kerasbert.serving.embedding_routes import TokenCounter, embedding_routes
from kerasbert.serving.json_routes import answered, budget_tokens
from kerasbert.serving.metrics import MetricsMiddleware, ServerMetrics
from kerasbert.serving.micro_batching import MicroBatcher
from kerasbert.serving.openapi import openapi_schema
from kerasbert.serving.tei_predict import is_tei_request, tei_predict


@dataclasses.dataclass(frozen=True)
class ServingLimits:
    """Request limits and micro-batching: at most `max_inputs` per request and `max_chars` per text; batches
    of at most `max_batch` rows and `max_batch_tokens` tokens (as TEI's `--max-batch-tokens`: long texts make
smaller batches), a request waiting at most `max_wait_ms` for others. The model predicts a
    micro-batch in length-sorted batches of `model_batch` rows: short texts are not padded to the longest
    one of the micro-batch (on MiniLM over UCI reviews, 32 texts in batches of 8 ran 1.6x faster than in
    one batch of 32). `model_workers` micro-batches are predicted at once, each in its own thread (on 2 cores, two
    served 32 clients of `/embed` 116 texts/s against 93-95 with one, but ONNX Runtime's `/predict` at 8 clients
    132 against 169, its own threads contending: `benchmarks/serve_load.py --model-workers N` measures yours)."""

    max_inputs: int = 256
    max_chars: int = 20_000
    max_batch: int = 32
    max_wait_ms: float = 5.0
    model_batch: int = 8
    max_batch_tokens: int = 16_384
    model_workers: int = 1


class BadRequest(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def frame_of(body, limits, model_columns=None):
    """The request body as a DataFrame of inputs under the model's column names (`model_columns`, {role:
    name}), or BadRequest naming what is wrong."""
    model_columns = model_columns or {}
    inputs = body.get("inputs") if isinstance(body, dict) else body
    if not isinstance(inputs, list):
        raise BadRequest(422, 'Send a JSON list of inputs, or {"inputs": [...]}: texts, [text, text_pair] pairs, '
                              'or objects with the model\'s columns.')
    if len(inputs) > limits.max_inputs:
        raise BadRequest(413, f"{len(inputs)} inputs in one request; the limit is {limits.max_inputs}. "
                              f"Split the request.")
    kinds = {type(item) for item in inputs}
    text, text_pair = model_columns.get("text", "text"), model_columns.get("text_pair", "text_pair")
    if kinds <= {str}:
        frame = pd.DataFrame({text: inputs})
    elif kinds <= {list} and all(len(item) == 2 and all(isinstance(t, str) for t in item) for item in inputs):
        frame = pd.DataFrame(inputs, columns=[text, text_pair])
    elif kinds <= {dict}:
        named = body.get("columns") if isinstance(body, dict) else None
        frame = renamed_fields(pd.DataFrame.from_records(inputs), named, model_columns)
    else:
        raise BadRequest(422, "Each input must be a text, a [text, text_pair] pair, or an object of columns; "
                              f"got {', '.join(sorted(kind.__name__ for kind in kinds))} (all inputs of one kind).")
    for column in frame.columns:
        lengths = [len(value) for value in frame[column] if isinstance(value, str)]
        if lengths and max(lengths) > limits.max_chars:
            raise BadRequest(413, f"An input's {column!r} has {max(lengths)} characters; the limit is "
                                  f"{limits.max_chars}. Shorten it or split the text.")
    return frame


def renamed_fields(frame, columns, model_columns):
    """Request objects whose fields `columns` ({role: field}) names, under the model's column names."""
    if columns is None:
        return frame
    if not isinstance(columns, dict) or not all(isinstance(v, str) for v in columns.values()):
        raise BadRequest(422, '"columns" must be an object of role -> field name, e.g. {"text": "body"}.')
    unknown = sorted(set(columns) - set(model_columns))
    if unknown:
        raise BadRequest(422, f'"columns" names the roles {unknown}; this model reads {sorted(model_columns)}.')
    renames = {field: model_columns[role] for role, field in columns.items() if field != model_columns[role]}
    clashing = sorted(set(renames.values()) & set(frame.columns))
    if clashing:
        raise BadRequest(422, f"The inputs have both {clashing} and the fields \"columns\" names for them; send one.")
    return frame.rename(columns=renames)


def frame_tokens(count_tokens, frame, longest):
    """The tokens a request's texts take, each text with its `[CLS]` and `[SEP]` and at most `longest`."""
    texts = [value for column in frame.columns for value in frame[column] if isinstance(value, str)]
    return budget_tokens(count_tokens(texts), longest) if texts else 0


def metadata_of(model, limits):
    import keras
    import tensorflow as tf

    from kerasbert import __version__

    labels = getattr(model, "labels", None)
    task = getattr(model, "keras_task", model)  # an OnnxTask's sizes are its Keras task's
    return {
        "task": type(task).__name__,
        "runtime": getattr(model, "runtime", "keras"),
        "labels": None if labels is None else [label.item() if hasattr(label, "item") else label for label in labels],
        "columns": getattr(model, "columns", None),
        "problem_type": getattr(model, "problem_type", None),
        "max_length": model.sequence_length,
        "backbone": {key: task.backbone.get_config()[key]
                     for key in ("vocabulary_size", "num_layers", "hidden_dim", "num_heads", "max_sequence_length")},
        "parameters": int(task.count_params()),
        "quantization": getattr(model, "quantization", None),
        "versions": {"kerasbert": __version__, "keras": keras.__version__, "tensorflow": tf.__version__,
                     "backend": keras.backend.backend()},
        "limits": dataclasses.asdict(limits),
    }


def create_app(model, limits=ServingLimits(), model_id=None):
    """A starlette app serving `model` (a kerasbert task model; see the module docstring); a text encoder and a
    reranker also answer TEI's and OpenAI's routes (`kerasbert.serving.embedding_routes`), as `model_id`."""
    def predict_frame(frame):
        with entered_through("http"):  # errors propose fixes as request fields: "columns": {"text": ...}
            return model.predict(frame, batch_size=limits.model_batch, verbose=0)

    metrics = ServerMetrics(routes=())
    count_tokens = TokenCounter(model.tokenizer)
    batcher = MicroBatcher(predict_frame, limits.max_batch, limits.max_wait_ms, observe_batch=metrics.observe_batch,
                           max_tokens=limits.max_batch_tokens,
                           count_tokens=lambda frame: frame_tokens(count_tokens, frame, model.sequence_length),
                           workers=limits.model_workers)
    metadata = metadata_of(model, limits)
    tei = tei_predict(model, batcher, limits, count_tokens) if metadata["task"] == "BertClassifier" else None
    started = time.time()

    async def predict(request):
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            return JSONResponse({"error": f"The body is not valid JSON ({error})."}, status_code=400)
        except RecursionError:
            return JSONResponse({"error": "The body nests JSON lists or objects too deeply; send a flat list of "
                                          "inputs."}, status_code=400)
        if tei is not None and is_tei_request(body):
            return await answered(tei, body)
        try:
            frame = frame_of(body, limits, getattr(model, "columns", None))
            predictions = await batcher.predict(frame) if len(frame) else predict_frame(frame)
        except BadRequest as error:
            return JSONResponse({"error": str(error)}, status_code=error.status)
        except (ValueError, TypeError, KeyError) as error:
            return JSONResponse({"error": " ".join(str(error).split())}, status_code=422)
        except Exception as error:  # noqa: BLE001 - the server answers and keeps serving
            return JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=500)
        return JSONResponse({"predictions": records(predictions)})

    async def health(request):
        return JSONResponse({"status": "ok", "uptime_s": round(time.time() - started, 1), "batches": batcher.batches})

    async def describe(request):
        return JSONResponse(metadata)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        keras_task = getattr(model, "keras_task", model)
        model.predict(keras_task.warm_up_rows(), verbose=0)  # trace the prediction function before the first request
        task = asyncio.create_task(batcher.run())
        yield
        task.cancel()
        batcher.close()

    routes = [Route("/predict", predict, methods=["POST"]), Route("/health", health), Route("/metadata", describe),
              Route("/metrics", metrics.endpoint)]
    routes += embedding_routes(model, batcher, limits, model_id or metadata["task"], count_tokens)
    schema = openapi_schema(metadata["task"], limits, hidden=metadata["backbone"]["hidden_dim"])
    routes.append(Route("/openapi.json", lambda request: JSONResponse(schema)))
    metrics.routes = {route.path for route in routes}
    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app
