"""The OpenAPI 3.1 schema of a kerasbert server (`GET /openapi.json`): the routes the served model answers, what
each accepts and what it answers, errors included, with the server's limits (inputs per request, characters per
text). The tests fuzz every route from it (schemathesis): no answer outside it, no 5xx.

Examples:
    >>> openapi_schema("BertTextEncoder", ServingLimits(), hidden=384)["paths"].keys()
    dict_keys(['/predict', '/health', '/metadata', '/metrics', '/info', '/embed', '/v1/embeddings', '/'])
"""

from kerasbert import __version__


def openapi_schema(task, limits, hidden=None):
    """The schema of an app serving a `task` (its class name) under `limits`; `hidden`: an encoder's width."""
    text = {"type": "string", "maxLength": limits.max_chars}
    texts = {"type": "array", "items": text, "minItems": 1, "maxItems": limits.max_inputs}
    one_or_many = {"oneOf": [text, texts]}
    pair = {"type": "array", "items": text, "minItems": 2, "maxItems": 2}
    inputs = {"oneOf": [{"type": "array", "maxItems": limits.max_inputs, "items": item}  # all of one kind
                        for item in (text, pair, {"type": "object"})]}
    own_body = {"oneOf": [inputs, {"type": "object", "required": ["inputs"], "properties": {
        "inputs": inputs, "columns": {"type": "object", "additionalProperties": {"type": "string"}}}}]}
    own_answer = {"type": "object", "required": ["predictions"],
                  "properties": {"predictions": {"type": "array", "items": {"type": "object"}}}}
    tei_predict = None
    if task == "BertClassifier":  # TEI's /predict: a text, a pair, or a list of those
        labelled = {"type": "array", "items": {"type": "object", "required": ["score", "label"], "properties": {
            "score": {"type": "number"}, "label": {"type": "string"}}}}
        tei_predict = post("TEI: every label's score per input, best first.", {
            "type": "object", "required": ["inputs"],
            "properties": {"inputs": {"oneOf": [text, pair, {"type": "array", "minItems": 1,
                                                             "maxItems": limits.max_inputs,
                                                             "items": {"oneOf": [text, pair]}}]},
                           "raw_scores": {"type": "boolean"}, "truncate": {"type": "boolean"}}},
            {"oneOf": [labelled, {"type": "array", "items": labelled}]}, "TeiError")
        own_body = {"oneOf": [own_body, tei_predict["post"]["requestBody"]["content"]["application/json"]["schema"]]}
        own_answer = {"oneOf": [own_answer, tei_predict["post"]["responses"]["200"]["content"]["application/json"][
            "schema"]]}
    paths = {
        "/predict": post("The model's predictions, one record per input, as `predict` gives them.", own_body,
                         own_answer, "PredictError"),
        "/health": get("Liveness, uptime and micro-batches run.", {"type": "object"}),
        "/metadata": get("The model: task, labels, columns, sizes, versions, limits.", {"type": "object"}),
        "/metrics": {"get": {"summary": "Prometheus metrics.",
                             "responses": {"200": {"description": "Prometheus' text format.",
                                                   "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
    }
    if tei_predict is not None:
        paths["/"] = tei_predict
    if task in ("BertTextEncoder", "BertCrossEncoder", "BertClassifier"):
        paths["/info"] = get("TEI's model and server description.", {"type": "object", "required": ["model_id"]})
        token = {"type": "object", "required": ["id", "text", "special", "start", "stop"],
                 "properties": {"id": {"type": "integer"}, "text": {"type": "string"}, "special": {"type": "boolean"},
                                "start": {"type": ["integer", "null"]}, "stop": {"type": ["integer", "null"]}}}
        paths["/tokenize"] = post("TEI: the tokens of each text, with their character offsets.", {
            "type": "object", "required": ["inputs"],
            "properties": {"inputs": one_or_many, "add_special_tokens": {"type": "boolean"}}},
            {"type": "array", "items": {"type": "array", "items": token}}, "TeiError")
    if task == "BertTextEncoder":
        dimensions = {"type": ["integer", "null"], "minimum": 1}
        embed = post("TEI: the vectors of the inputs.", {
            "type": "object", "required": ["inputs"],
            "properties": {"inputs": one_or_many, "normalize": {"type": "boolean"}, "truncate": {"type": "boolean"},
                           "dimensions": dimensions}},
            {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}, "TeiError")
        paths["/embed"], paths["/"] = embed, embed
        paths["/v1/embeddings"] = post("OpenAI's embeddings API.", {
            "type": "object", "required": ["input"],
            "properties": {"input": one_or_many, "model": {"type": "string"}, "user": {"type": "string"},
                           "encoding_format": {"enum": ["float", "base64"]}, "dimensions": dimensions}},
            {"type": "object", "required": ["object", "data", "model", "usage"],
             "properties": {"object": {"const": "list"}, "model": {"type": "string"},
                            "data": {"type": "array", "items": {
                                "type": "object", "required": ["object", "index", "embedding"],
                                "properties": {"object": {"const": "embedding"}, "index": {"type": "integer"},
                                               "embedding": {"oneOf": [{"type": "array", "items": {"type": "number"},
                                                                        "maxItems": hidden}, {"type": "string"}]}}}},
                            "usage": {"type": "object", "required": ["prompt_tokens", "total_tokens"]}}},
            "OpenAIError")
    if task == "BertCrossEncoder":
        rerank = post("TEI: the texts scored for the query, best first.", {
            "type": "object", "required": ["query", "texts"],
            "properties": {"query": text, "texts": texts, "return_text": {"type": "boolean"},
                           "raw_scores": {"type": "boolean"}, "truncate": {"type": "boolean"}}},
            {"type": "array", "items": {"type": "object", "required": ["index", "score"],
                                        "properties": {"index": {"type": "integer"}, "score": {"type": "number"},
                                                       "text": {"type": "string"}}}}, "TeiError")
        paths["/rerank"], paths["/"] = rerank, rerank
    return {"openapi": "3.1.0", "info": {"title": f"kerasbert serve: {task}", "version": __version__},
            "paths": paths, "components": {"schemas": ERRORS}}


ERRORS = {
    "PredictError": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
    "TeiError": {"type": "object", "required": ["error", "error_type"],
                 "properties": {"error": {"type": "string"}, "error_type": {"type": "string"}}},
    "OpenAIError": {"type": "object", "required": ["error"],
                    "properties": {"error": {"type": "object", "required": ["message", "type"],
                                             "properties": {"message": {"type": "string"},
                                                            "type": {"type": "string"}}}}},
}


def get(summary, answer):
    return {"get": {"summary": summary, "responses": {"200": json_answer("OK", answer)}}}


def post(summary, body, answer, error):
    failure = json_answer("What is wrong and how to fix it.", {"$ref": f"#/components/schemas/{error}"})
    return {"post": {"summary": summary,
                     "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
                     "responses": {"200": json_answer("OK", answer), "400": failure, "413": failure,
                                   "422": failure}}}


def json_answer(description, schema):
    return {"description": description, "content": {"application/json": {"schema": schema}}}
