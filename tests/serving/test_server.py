"""`kerasbert serve`'s app under a real uvicorn server on loopback, driven by a real HTTP client (httpx):
predictions equal `predict`, concurrent requests are micro-batched, bad requests get 400/413/422 and the
server keeps serving."""

import concurrent.futures

import httpx
import keras
import numpy as np
import pytest

from kerasbert.serving import ServingLimits, create_app


@pytest.fixture(scope="module")
def served(tiny_classifier_file, serve_in_thread):
    """(base URL, model) of a server running in a thread of this process."""
    model = keras.saving.load_model(tiny_classifier_file)
    limits = ServingLimits(max_inputs=8, max_chars=200, max_batch=16, max_wait_ms=20)
    with serve_in_thread(create_app(model, limits)) as url:
        yield url, model


def test_predictions_equal_predict_and_metadata_describes_the_model(served, uci_reviews):
    url, model = served
    texts = uci_reviews[1]["text"].tolist()[:6] + [""]
    answer = httpx.post(f"{url}/predict", json=texts, timeout=60)
    assert answer.status_code == 200
    rows = answer.json()["predictions"]
    expected = model.predict(texts)
    assert [row["label"] for row in rows] == expected["label"].tolist()
    np.testing.assert_allclose([row["probabilities"] for row in rows], np.stack(expected["probabilities"]), atol=1e-5)
    assert httpx.post(f"{url}/predict", json={"inputs": [{"text": texts[0]}]}).json()["predictions"][0] == rows[0]

    assert httpx.get(f"{url}/health").json()["status"] == "ok"
    metadata = httpx.get(f"{url}/metadata").json()
    assert metadata["task"] == "BertClassifier" and metadata["labels"] == [0, 1]  # as predictions give them
    assert metadata["max_length"] == 64 and metadata["versions"]["keras"] == keras.__version__


def test_concurrent_requests_share_batches(served, uci_reviews):
    url, model = served
    texts = uci_reviews[1]["text"].tolist()
    batches_before = httpx.get(f"{url}/health").json()["batches"]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda text: httpx.post(f"{url}/predict", json=[text], timeout=60), texts))
    assert all(answer.status_code == 200 for answer in answers)
    assert [answer.json()["predictions"][0]["label"] for answer in answers] == model.predict(texts)["label"].tolist()
    assert httpx.get(f"{url}/health").json()["batches"] - batches_before < len(texts)


def test_the_columns_a_422_proposes_are_accepted(served):
    url, model = served
    answer = httpx.post(f"{url}/predict", json={"inputs": [{"review": "a lovely film"}], "columns": {"text": "review"}})
    assert answer.status_code == 200, answer.text
    assert answer.json()["predictions"][0]["label"] == model.predict(["a lovely film"])["label"][0]
    labels = httpx.get(f"{url}/metadata").json()["labels"]
    assert labels == list(model.labels) and all(type(label) is type(answer.json()["predictions"][0]["label"])
                                                for label in labels)


@pytest.mark.parametrize("body, status, message", [
    (b"{not json", 400, "not valid JSON"),
    (b"[" * 5000 + b"]" * 5000, 400, "nests JSON lists or objects too deeply"),
    (b'["1", "2", "3", "4", "5", "6", "7", "8", "9"]', 413, "9 inputs in one request; the limit is 8"),
    (b'["' + b"x" * 201 + b'"]', 413, "201 characters; the limit is 200"),
    (b'{"texts": ["a"]}', 422, "Send a JSON list of inputs"),
    (b"[1, 2]", 422, "Each input must be a text"),
    (b'[{"review": "a"}]', 422, "Column 'text' not found"),
    (b'[{"review": "a"}]', 422, 'e.g. "columns": {"text": "review"} in the request body'),
    (b'{"inputs": [{"review": "a"}], "columns": {"txt": "review"}}', 422, "names the roles ['txt']"),
])
def test_bad_requests_are_answered_and_the_server_keeps_serving(served, body, status, message):
    url, _ = served
    answer = httpx.post(f"{url}/predict", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == status and message in answer.json()["error"]
    assert httpx.post(f"{url}/predict", json=["still serving"]).status_code == 200


def test_metrics_count_requests_batches_and_waits(served):
    """Prometheus' text format, read with prometheus_client's own parser."""
    from prometheus_client.parser import text_string_to_metric_families

    url, _ = served

    def samples():
        text = httpx.get(f"{url}/metrics").text
        return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
                for family in text_string_to_metric_families(text) for sample in family.samples}

    before = samples()
    assert httpx.post(f"{url}/predict", json=["a", "b", "c"]).status_code == 200
    assert httpx.post(f"{url}/predict", content=b"{oops").status_code == 400
    assert httpx.get(f"{url}/no/such/route").status_code == 404
    after = samples()

    def grew(name, **labels):
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    assert grew("kerasbert_requests_total", route="/predict", status="200") == 1
    assert grew("kerasbert_requests_total", route="/predict", status="400") == 1
    assert grew("kerasbert_requests_total", route="other", status="404") == 1
    assert grew("kerasbert_request_duration_seconds_count", route="/predict") == 2
    assert grew("kerasbert_batch_rows_count") == 1 and grew("kerasbert_batch_rows_sum") == 3
    assert grew("kerasbert_queue_seconds_count") == 1


def test_tei_predict_bodies_get_tei_answers(served, uci_reviews):
    """TEI's `/predict` (and `POST /`, where `huggingface_hub`'s client sends it): every label with its probability,
    best first, per input; logits with `raw_scores`; TEI's reading of a two-text list as a pair; its length check."""
    from huggingface_hub import InferenceClient

    url, model = served
    texts = uci_reviews[1]["text"].tolist()[:3]
    probabilities = np.stack(model.predict(texts)["probabilities"])
    logits = model.predict_outputs(texts)[0]

    def as_scores(answer):  # TEI's [{"score", "label"}] (best first) -> scores in label order
        assert [item["score"] for item in answer] == sorted((item["score"] for item in answer), reverse=True)
        return [{item["label"]: item["score"] for item in answer}[str(label)] for label in model.labels]

    single = httpx.post(f"{url}/predict", json={"inputs": texts[0]}).json()
    np.testing.assert_allclose(as_scores(single), probabilities[0], atol=1e-5)
    batch = httpx.post(f"{url}/predict", json={"inputs": texts, "raw_scores": True}).json()
    np.testing.assert_allclose([as_scores(answer) for answer in batch], logits, atol=1e-5)
    top = InferenceClient(base_url=url).text_classification(texts[1])
    top = top if isinstance(top, list) else [top]  # (the client gives a list, or its first item, by version)
    assert top[0].label == str(model.labels[probabilities[1].argmax()])
    assert top[0].score == pytest.approx(probabilities[1].max(), abs=1e-5)

    pair = httpx.post(f"{url}/predict", json={"inputs": texts[:2]})
    assert pair.status_code == 422 and "reads single texts" in pair.json()["error"]
    too_long = httpx.post(f"{url}/predict", json={"inputs": "a " * 99})
    assert too_long.status_code == 413 and "must have less than 64 tokens" in too_long.json()["error"]
    assert httpx.post(f"{url}/predict", json={"inputs": "a " * 99, "truncate": True}).status_code == 200
    info = httpx.get(f"{url}/info").json()
    assert info["model_type"] == {"classifier": {"id2label": {"0": "0", "1": "1"}, "label2id": {"0": 0, "1": 1}}}
