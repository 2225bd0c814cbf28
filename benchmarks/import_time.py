"""`import kerasbert` wall time in a fresh process, beside `import keras_hub` and `import transformers`.

Each repetition starts a new Python process (`-c`) that times only the import statement with
`time.perf_counter`, so interpreter start-up is excluded and nothing is cached in the process (the
OS file cache is warm after the first run). `import tensorflow` is the floor under both Keras
libraries; `transformers` imports lazily (torch and the model code load on first use).

Run:
    .venv/bin/python benchmarks/import_time.py [--repeats 5]
"""

import argparse
import os
import subprocess
import sys

from _timing import QUIET_ENV, REPO, markdown_table, median, ratio

MODULES = ("kerasbert", "keras_hub", "transformers", "tensorflow")
TIMER = "import time; start = time.perf_counter(); import {}; print(time.perf_counter() - start)"


def import_seconds(module):
    done = subprocess.run([sys.executable, "-c", TIMER.format(module)], cwd=REPO, check=True,
                          env={**os.environ, **QUIET_ENV}, capture_output=True, text=True)
    return float(done.stdout.strip().splitlines()[-1])


def report(repeats=5):
    seconds = {module: median([import_seconds(module) for _ in range(repeats)]) for module in MODULES}
    rows = [[f"`import {module}`", f"{value:.2f}", ratio(value, seconds["kerasbert"])]
            for module, value in seconds.items()]
    return "\n\n".join([
        f"## Import time (fresh process, median of {repeats})",
        markdown_table(["statement", "seconds", "its time / kerasbert's"], rows),
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    print(report(parser.parse_args().repeats))


if __name__ == "__main__":
    main()
