"""Every route of a running server, fuzzed from its own OpenAPI schema (schemathesis, bounded): no 5xx, every answer
as the schema says (status codes, bodies), and the server keeps serving. A text encoder's app (its TEI and OpenAI
routes) and a classifier's (/predict in both shapes, TEI's /). Left out: schemathesis' check that every schema-valid
request succeeds: a request the model refuses for its content (an object without the model's text column, a text
past its tokens without `truncate`) is answered 413 or 422 with the fix, as the schema says."""

import httpx
import schemathesis
from hypothesis import HealthCheck, given, settings

from kerasbert.serving import ServingLimits, create_app
from kerasbert.tasks import BertTextEncoder

LIMITS = ServingLimits(max_inputs=4, max_chars=300)


FUZZING = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                   database=None)


def fuzz_every_route(url):
    """Each operation of the server's schema, `FUZZING.max_examples` generated requests."""
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    for operation in operations:
        @FUZZING
        @given(case=operation.as_strategy())
        def call(case):
            case.call_and_validate(timeout=60, excluded_checks=[schemathesis.checks.positive_data_acceptance])

        call()
    return {operation.path for operation in operations}


def test_encoder_routes_answer_as_their_schema_says(tiny_preset, serve_in_thread):
    encoder = BertTextEncoder.from_preset(tiny_preset, sequence_length=32)
    with serve_in_thread(create_app(encoder, LIMITS)) as url:
        assert {"/embed", "/v1/embeddings", "/", "/info", "/predict", "/metrics"} <= fuzz_every_route(url)
        assert httpx.post(f"{url}/embed", json={"inputs": "still serving"}).status_code == 200


def test_classifier_routes_answer_as_their_schema_says(tiny_classifier_file, serve_in_thread):
    import keras

    with serve_in_thread(create_app(keras.saving.load_model(tiny_classifier_file), LIMITS)) as url:
        assert fuzz_every_route(url) == {"/predict", "/", "/info", "/tokenize", "/health", "/metadata", "/metrics"}
        assert httpx.post(f"{url}/predict", json=["still serving"]).status_code == 200
