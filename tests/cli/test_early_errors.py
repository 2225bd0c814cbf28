"""The command line checks its arguments, files and columns before it imports TensorFlow: each bad input ends
in one `Error:` line that names the fix as a flag, from a process that never imported TensorFlow."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

# A classifier saved by an earlier kerasbert that reads its texts from a `review` column.
SAVED = Path(__file__).resolve().parents[1] / "fixtures" / "saved_2026_11_26" / "classifier.keras"
# Runs the command in a fresh interpreter, then says on stderr whether TensorFlow was imported and on stdout
# the command's exit code.
PROBE = """
import os, sys
os.chdir({cwd!r})
sys.argv = ["kerasbert", *{arguments!r}]
from kerasbert.cli import main
try:
    main()
except SystemExit as done:
    print("TENSORFLOW IMPORTED" if "tensorflow" in sys.modules else "NO TENSORFLOW", file=sys.stderr)
    print("EXIT", done.code if isinstance(done.code, int) else int(done.code is not None))  # as the process's
"""


def run(fresh_python, *arguments, cwd):
    """The command in a child of a fresh_python server that imported only pandas and click (what the command line
    reads its files with; kerasbert itself decides at import, from sys.argv, what it imports): TensorFlow in its
    modules after the command means the command imported it."""
    return fresh_python(PROBE.format(cwd=str(cwd), arguments=list(map(str, arguments))), imports=("pandas", "click"),
                        timeout=120)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("early")
    pd.DataFrame({"review": ["a lovely film"], "stars": [1]}).to_csv(folder / "reviews.csv", index=False)
    pd.DataFrame({"text": ["a lovely film"]}).to_csv(folder / "texts.csv", index=False)
    pd.DataFrame({"review": ["a lovely film"]}).to_csv(folder / "unlabelled.csv", index=False)
    shutil.copy(SAVED, folder / "model.keras")
    (folder / "truncated.keras").write_bytes(SAVED.read_bytes()[:5000])
    return folder


@pytest.mark.parametrize("arguments, message", [
    (["predict", "missing.keras", "texts.csv"], "missing.keras: no such file"),
    (["predict", "model.keras", "missing.csv"], "No file 'missing.csv'"),
    (["predict", "truncated.keras", "texts.csv"], "not a complete .keras file"),
    (["predict", "model.keras", "texts.csv"], "no column 'review' (text)"),  # the model reads `review`
    (["predict", "model.keras", "texts.csv"], "Name yours, e.g. --column text=text."),
    (["evaluate", "model.keras", "reviews.csv"], "no column 'label' (label)"),
    (["evaluate", "model.keras", "reviews.csv"], "e.g. --column label=stars."),
    (["evaluate", "model.keras", "unlabelled.csv"], "Add the label as a 'label' column."),
    (["predict", "model.keras", "texts.csv", "--column", "text"], "'text' is not ROLE=NAME"),
    (["fit", "reviews.csv"], "or name yours, e.g. --column text=<yours> --column label=<yours>"),
    (["fit", "texts.csv", "--output", "model.h5"], "does not end in .keras"),
])
def test_bad_input_is_named_before_tensorflow_is_imported(folder, arguments, message, fresh_python):
    done = run(fresh_python, *arguments, cwd=folder)
    exit_line = done.stdout.strip().splitlines()[-1]
    assert exit_line.startswith("EXIT ") and exit_line != "EXIT 0"
    assert message in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().endswith("NO TENSORFLOW")
