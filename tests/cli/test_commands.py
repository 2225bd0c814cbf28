"""The `kerasbert` command: the console script as a subprocess (fit -> predict from stdin), the other commands
and their bad inputs in-process through click's runner. Bad input ends in one `Error:` line, never a traceback."""

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from kerasbert.cli import main
from kerasbert.cli.model_commands import parameter_count
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.presets.registry import PRESETS

SCRIPT = Path(sys.executable).with_name("kerasbert")


def kerasbert(*arguments, stdin=None, cwd=None):
    environment = {**os.environ, "KERAS_BACKEND": "tensorflow"}
    return subprocess.run([str(SCRIPT), *map(str, arguments)], input=stdin, capture_output=True, text=True,
                          cwd=cwd, env=environment)


def test_fit_then_predict_from_stdin_as_a_subprocess(tiny_preset, uci_reviews, tmp_path):
    """Columns named with --column are kept by the model: texts from stdin are its text column. With stderr
    redirected (a log), progress is plain lines: no carriage returns, backspaces or colour codes."""
    train, test = (frame.rename(columns={"text": "review", "label": "stars"}) for frame in uci_reviews)
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_json(tmp_path / "test.jsonl", orient="records", lines=True)
    fitted = kerasbert("fit", "train.csv", "--preset", tiny_preset, "--validation", "test.jsonl", "--batch-size", 8,
                       "--column", "text=review", "--column", "label=stars", "--output", "model.keras",
                       "--report", "report", cwd=tmp_path)
    assert fitted.returncode == 0, fitted.stderr[-3000:]
    assert re.search(r"^3/3 - \d+s - .*val_accuracy", fitted.stderr, re.M) and not set("\r\b\x1b") & set(fitted.stderr)
    metrics = json.loads(fitted.stdout)  # stdout holds only the validation metrics; progress went to stderr
    model = keras.saving.load_model(tmp_path / "model.keras")
    assert model.columns == {"text": "review", "text_pair": "text_pair", "label": "stars"}
    assert metrics == pytest.approx(model.evaluate(test, verbose=0))
    assert json.loads((tmp_path / "report" / "metrics.json").read_text()) == pytest.approx(metrics)

    predicted = CliRunner().invoke(main, ["predict", str(tmp_path / "model.keras")], input="a lovely film\nNA\n")
    assert predicted.exit_code == 0, predicted.output[-3000:]  # in process: the subprocess above ran the command line
    rows = [json.loads(line) for line in predicted.stdout.splitlines()]
    expected = model.predict(["a lovely film", "NA"])  # "NA" stays a text
    assert [row["text"] for row in rows] == ["a lovely film", "NA"]
    assert [row["label"] for row in rows] == expected["label"].tolist()
    np.testing.assert_allclose([row["probabilities"] for row in rows], np.stack(expected["probabilities"]), atol=1e-5)


def test_help_shows_a_working_example_for_every_command():
    for command in ("fit", "evaluate", "predict", "prepare-pretraining", "pretrain", "convert", "export", "presets",
                    "serve"):
        result = CliRunner().invoke(main, [command, "--help"])
        assert result.exit_code == 0 and "Example:" in result.output and "kerasbert " + command in result.output


def test_predict_and_evaluate_files_in_process(tiny_classifier_file, uci_reviews, tmp_path):
    test = uci_reviews[1]
    test.to_parquet(tmp_path / "test.parquet")
    result = CliRunner().invoke(main, ["predict", str(tiny_classifier_file), str(tmp_path / "test.parquet"),
                                       "--output", str(tmp_path / "out.csv")])
    assert result.exit_code == 0, result.output
    written = pd.read_csv(tmp_path / "out.csv")
    assert written.columns.tolist() == ["text", "label", "predicted_label", "score", "probabilities", "truncated"]
    assert written["text"].tolist() == test["text"].tolist() and written["label"].tolist() == test["label"].tolist()
    model = keras.saving.load_model(tiny_classifier_file)
    assert written["predicted_label"].tolist() == model.predict(test)["label"].tolist()

    result = CliRunner().invoke(main, ["evaluate", str(tiny_classifier_file), str(tmp_path / "test.parquet")])
    assert result.exit_code == 0 and json.loads(result.output) == pytest.approx(model.evaluate(test, verbose=0))


def test_presets_lists_every_name_with_its_parameter_count():
    result = CliRunner().invoke(main, ["presets"])
    assert result.exit_code == 0
    assert "bert_base_en_uncased" in result.output and "109,482,240" in result.output
    assert len(result.output.splitlines()) == len(PRESETS) + 1
    assert parameter_count(PRESETS["bert_large_en_uncased"]["config"]) == 335141888


def test_convert_and_export(tiny_preset, tiny_classifier_file, tmp_path):
    import transformers

    result = CliRunner().invoke(main, ["convert", str(tiny_preset), str(tmp_path / "hf"), "--format", "hf"])
    assert result.exit_code == 0, result.output
    backbone = BertBackbone.from_preset(tiny_preset)
    assert transformers.BertModel.from_pretrained(tmp_path / "hf").num_parameters() == backbone.count_params()
    result = CliRunner().invoke(main, ["export", str(tiny_classifier_file), str(tmp_path / "savedmodel")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "savedmodel" / "saved_model.pb").is_file()


@pytest.mark.parametrize("arguments, message", [
    (["fit", "no_such_file.csv"], "No file 'no_such_file.csv', and no shipped data set of that name"),
    (["fit", "uci_sentiment:dev"], "Dataset 'uci_sentiment' has no split 'dev'. Splits: train, test"),
    (["fit", "uci_sentiment", "--preset", "no_such_preset"], "Unknown preset 'no_such_preset'"),
    (["fit", "uci_sentiment", "--task", "translation"], "Invalid value for '--task'"),
    (["fit", "uci_sentiment", "--task-arg", 'columns={"text": "review"}'], "Column 'review' not found"),
    (["fit", "uci_sentiment", "--batch-size", "0"], "Invalid value for '--batch-size': 0 is not in the range x>=1"),
    (["fit", "jane_austen"], "Cannot tell the task from the columns book, chapter, is_heading, text"),
    (["predict", "no_such_model.keras", "-"], "no_such_model.keras: no such file"),
])
def test_bad_input_is_one_line_naming_the_problem(arguments, message):
    result = CliRunner().invoke(main, arguments, input="")
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if line.startswith("Error")]) == 1


@pytest.mark.parametrize("content, output, message", [
    ("text,text,label\na,b,pos\n", "model.keras", "has more than one column named 'text'"),
    ("", "model.keras", "is empty; it needs a header row"),
    ("text,label\na,pos\nb,neg\n", "model.h5", "model.h5' does not end in .keras"),
])
def test_bad_files_are_named_before_any_model_is_built(tmp_path, content, output, message):
    (tmp_path / "data.csv").write_text(content)
    result = CliRunner().invoke(main, ["fit", str(tmp_path / "data.csv"), "--preset", "no_such_preset",
                                       "--output", str(tmp_path / output)])
    assert result.exit_code != 0 and message in result.output and "Traceback" not in result.output


def test_a_corrupt_model_file_is_named(tiny_classifier_file, tmp_path):
    truncated = tmp_path / "truncated.keras"
    truncated.write_bytes(tiny_classifier_file.read_bytes()[:5000])
    result = CliRunner().invoke(main, ["predict", str(truncated), "-"], input="a text\n")
    assert result.exit_code == 1
    assert "is not a complete .keras file" in result.output and "Save the model again" in result.output


def test_pretrain_writes_a_preset_that_fit_reads(tiny_preset, tmp_path):
    from kerasbert.data.shipped import load_dataset
    from kerasbert.tasks import BertClassifier

    chapters = load_dataset("jane_austen", "test")["text"].tolist()
    (tmp_path / "austen.txt").write_text("\n".join(chapters[:60]), encoding="utf-8")
    result = CliRunner().invoke(main, ["pretrain", str(tmp_path / "austen.txt"), "--preset", str(tiny_preset),
                                       "--output", str(tmp_path / "austen_bert"), "--max-length", "32",
                                       "--batch-size", "8", "--no-next-sentence"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "austen_bert" / "heads.safetensors").is_file()
    card = (tmp_path / "austen_bert" / "README.md").read_text()  # save_to_preset writes the model card
    assert card.startswith("# BertPretrainer") and "1 layers, hidden 16" in card and "## Versions" in card
    assert BertClassifier.from_preset(tmp_path / "austen_bert", num_classes=2).backbone.num_layers == 1


def test_prepare_pretraining_then_pretrain_on_the_stream(tiny_preset, tmp_path):
    from kerasbert.data.pretraining_shards import read_manifest
    from kerasbert.data.shipped import load_dataset
    from kerasbert.tasks import BertPretrainer

    chapters = load_dataset("jane_austen", "test").groupby(["book", "chapter"], sort=False)["text"].agg("\n".join)
    (tmp_path / "austen.jsonl").write_text("".join(json.dumps({"body": text}) + "\n" for text in chapters[:8]),
                                           encoding="utf-8")
    result = CliRunner().invoke(main, ["prepare-pretraining", str(tmp_path / "austen.jsonl"), "--output",
                                       str(tmp_path / "shards"), "--preset", str(tiny_preset), "--text-field", "body",
                                       "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert read_manifest(tmp_path / "shards")["documents"] == 8 and "8 documents" in result.output
    result = CliRunner().invoke(main, ["pretrain", str(tmp_path / "shards"), "--preset", str(tiny_preset),
                                       "--output", str(tmp_path / "streamed_bert"), "--max-length", "32",
                                       "--batch-size", "4", "--steps-per-epoch", "4", "--gradient-accumulation-steps",
                                       "2", "--optimizer", "lamb", "--no-next-sentence", "--masking", "span",
                                       "--span-boundary-objective"])
    assert result.exit_code == 0, result.output
    assert "8 documents (streamed)" in result.output and (tmp_path / "streamed_bert" / "heads.safetensors").is_file()
    spanbert = BertPretrainer.from_preset(tmp_path / "streamed_bert")  # its pre-training options come back
    assert spanbert.masking.strategy == "span" and spanbert.span_boundary_objective and spanbert.next_sentence is None
    result = CliRunner().invoke(main, ["pretrain", str(tmp_path / "austen.jsonl"), "--output", str(tmp_path / "x"),
                                       "--steps-per-epoch", "4"])
    assert result.exit_code != 0 and "applies to a shard folder" in result.output


def test_bad_multi_process_settings_are_named_errors_not_hangs(tiny_preset, tmp_path):
    base = ["pretrain", str(tmp_path), "--preset", str(tiny_preset), "--output", str(tmp_path / "never")]
    result = CliRunner().invoke(main, [*base, "--num-processes", "2", "--process-id", "2", "--coordinator", "x:1"])
    assert result.exit_code != 0 and "2 is not a process of 2: number them 0 to 1" in result.output
    result = CliRunner().invoke(main, [*base, "--num-processes", "2", "--process-id", "1"])
    assert result.exit_code != 0 and "several processes need the coordinator's host:port" in result.output
    if keras.backend.backend() != "jax":
        result = CliRunner().invoke(main, [*base, "--num-processes", "2", "--process-id", "1", "--coordinator",
                                           "localhost:1"])
        assert result.exit_code == 1 and "Several processes train on the JAX backend" in result.output
    # A coordinator that never answers: process 1 gives up after --join-timeout with a named error.
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        port = sock.getsockname()[1]
    started = time.perf_counter()
    done = subprocess.run([str(SCRIPT), *base, "--num-processes", "2", "--process-id", "1", "--coordinator",
                           f"localhost:{port}", "--join-timeout", "3"],
                          env={**os.environ, "KERAS_BACKEND": "jax"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"could not join the run at localhost:{port} within 3 s" in done.stderr
    assert time.perf_counter() - started < 120


def test_messages_propose_flags_the_commands_take(tiny_preset, tiny_classifier_file, uci_reviews, tmp_path):
    uci_reviews[0].rename(columns={"text": "review"}).to_csv(tmp_path / "reviews.csv", index=False)
    result = CliRunner().invoke(main, ["fit", str(tmp_path / "reviews.csv"), "--preset", str(tiny_preset),
                                       "--task", "classifier", "--task-arg", "text_column=review",
                                       "--output", str(tmp_path / "m.keras")])
    assert result.exit_code == 1 and "text_column: now pass --column text=review." in result.output
    (tmp_path / "texts.txt").write_text("a lovely film\nawful acting\n")  # a .txt file: one text per line
    result = CliRunner().invoke(main, ["predict", str(tiny_classifier_file), str(tmp_path / "texts.txt")])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["text"] for row in rows] == ["a lovely film", "awful acting"]
