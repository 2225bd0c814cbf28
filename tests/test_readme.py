"""The README's tour runs as written: its Python block in a fresh `python`, then its shell block in bash with
the package's `kerasbert` on the PATH, in an empty folder. The real checkpoint (all_minilm_l6_v2_en) learns
sentiment from 2,000 real reviews, and every file the tour writes deploys."""

import ast
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def tour_blocks():
    """The first ```python block after "## Tour" and the ```bash block after it."""
    tour = README.read_text().split("## Tour", 1)[1]
    python = re.search(r"```python\n(.*?)```", tour, re.S)
    shell = re.search(r"```bash\n(.*?)```", tour[python.end():], re.S)
    return python.group(1), shell.group(1)


def test_the_tour_runs_as_written_and_its_files_deploy(tmp_path):
    python_code, shell_code = tour_blocks()
    ran = subprocess.run([sys.executable, "-c", python_code], cwd=tmp_path, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-4000:]
    results = ast.literal_eval(next(line for line in ran.stdout.splitlines() if line.startswith("{'loss'")))
    print(f"README tour: {results}")
    assert results["accuracy"] > 0.84 and results["loss"] < 0.5  # HF on this protocol: 0.876 (5 seeds, length 128)

    with zipfile.ZipFile(tmp_path / "sentiment.keras") as archive:
        assert archive.getinfo("config.json").file_size < 5000
        assert [n for n in archive.namelist() if n.startswith("assets/")] == \
            ["assets/preprocessor/tokenizer/vocabulary.json"]
    assert (tmp_path / "sentiment_savedmodel" / "saved_model.pb").is_file()
    assert os.path.getsize(tmp_path / "sentiment_int8.keras") < 0.3 * os.path.getsize(tmp_path / "sentiment.keras")

    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    shell = subprocess.run(["bash", "-e", "-c", shell_code], cwd=tmp_path, capture_output=True, text=True,
                           env={**os.environ, "PATH": path}, timeout=600)
    assert shell.returncode == 0, shell.stderr[-4000:]
    lines = shell.stdout.splitlines()
    predicted = [json.loads(line) for line in lines[:2]]
    assert [row["text"] for row in predicted] == ["What a lovely film.", "The battery died after an hour."]
    assert [row["label"] for row in predicted] == [1, 0]
    evaluated = json.loads("\n".join(lines[2:lines.index("}") + 1]))
    assert evaluated["accuracy"] == results["accuracy"]
    served = json.loads(lines[lines.index("}") + 1])
    assert served["predictions"][0]["label"] == 1
    assert "\r" not in shell.stderr and "\x1b" not in shell.stderr  # progress in a log: plain lines
