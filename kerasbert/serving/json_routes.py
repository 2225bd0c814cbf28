"""What the JSON routes of the protocols kerasbert speaks (TEI, OpenAI) share: `RouteError`, the options of a
request body, the token-length check, and `json_route`, which turns a handler of a parsed body into a route
that answers its errors in the protocol's shape.

Examples:
    >>> Route("/embed", json_route(embed), methods=["POST"])
"""

import json

import numpy as np
import orjson
from starlette.responses import JSONResponse


class FastJSONResponse(JSONResponse):
    """A `JSONResponse` written by orjson, numpy arrays included: a float32 vector in the shortest digits that give
    back its float32 values, 20x faster than `json` (0.013 against 0.30 ms for 384 floats, on the event loop of
    every embedding request).

    Examples:
        >>> FastJSONResponse([np.float32([0.5, 0.25])]).body
        b'[[0.5,0.25]]'
    """

    def render(self, content):
        return orjson.dumps(content, default=_listed, option=orjson.OPT_SERIALIZE_NUMPY)


def _listed(value):
    """What orjson hands back: a numpy array it does not write itself (a column slice, not C-contiguous) as lists."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


class RouteError(Exception):
    def __init__(self, status, message, kind="Validation", param=None):
        super().__init__(message)
        self.status, self.kind, self.param = status, kind, param


def texts_of(value, field, limits):
    """A request's text or list of texts as a list, or RouteError naming what is wrong."""
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
        raise RouteError(422, f"`{field}` must be a text or a non-empty list of texts.", param=field)
    if len(texts) > limits.max_inputs:
        raise RouteError(413, f"batch size {len(texts)} > maximum allowed batch size {limits.max_inputs}",
                         param=field)
    if max(len(text) for text in texts) > limits.max_chars:
        raise RouteError(413, f"a text has more than {limits.max_chars} characters; shorten it", param=field)
    return texts


def option(body, name, kind, default):
    value = body.get(name, default)
    if value is None:
        return default
    if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise RouteError(422, f"`{name}` must be a positive integer; got {value!r}.", param=name)
    if kind is not int and not isinstance(value, kind):
        raise RouteError(422, f"`{name}` must be a {kind.__name__}; got {value!r}.", param=name)
    return value


def check_lengths(counts, model, truncate):
    limit = model.sequence_length
    if not truncate and counts.max() > limit:
        raise RouteError(413, f"Input validation error: `inputs` must have less than {limit} tokens. Given: "
                              f"{int(counts.max())}. Send `\"truncate\": true` to cut them.")


def budget_tokens(counts, longest):
    """What texts of `counts` tokens take of a micro-batch's token budget: each at most `longest` (the model's
    length; None: no cap)."""
    return int(np.minimum(counts, longest or np.inf).sum())


def json_route(handler, openai=False):
    """A starlette route calling `await handler(body)` on the JSON object a request sends; errors answer as TEI's
    `{"error", "error_type"}` or, with `openai`, OpenAI's `{"error": {"message", "type", "param", "code"}}`."""
    async def route(request):
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
            return error_response(RouteError(400, f"The body is not valid JSON ({error})."), openai)
        return await answered(handler, body, openai)
    return route


async def answered(handler, body, openai=False):
    """`await handler(body)` as a JSON response (numpy arrays as lists), or its error in the protocol's shape (see
    `json_route`)."""
    try:
        if not isinstance(body, dict):
            raise RouteError(422, "The body must be a JSON object.")
        return FastJSONResponse(await handler(body))
    except RouteError as error:
        return error_response(error, openai)
    except (ValueError, TypeError, KeyError) as error:
        return error_response(RouteError(422, " ".join(str(error).split())), openai)


def error_response(error, openai):
    if openai:
        return JSONResponse({"error": {"message": str(error), "type": "invalid_request_error", "param": error.param,
                                       "code": None}}, status_code=error.status)
    return JSONResponse({"error": str(error), "error_type": error.kind}, status_code=error.status)
