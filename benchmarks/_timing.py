"""Helpers shared by the benchmark scripts: timing, medians, subprocess workers, markdown tables.

Not a benchmark itself; `benchmarks/run_all.py` and each `benchmarks/<name>.py` import it.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
QUIET_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "TOKENIZERS_PARALLELISM": "true"}


def cores():
    """CPU cores this process may use."""
    return len(os.sched_getaffinity(0))


def timed(fn, repeats, warmup=1):
    """Seconds of each of `repeats` calls of `fn()`, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def median(values):
    return statistics.median(values)


def ratio(numerator, denominator):
    """`numerator / denominator` as `1.23x`, or `n/a` when either is missing."""
    if not numerator or not denominator:
        return "n/a"
    return f"{numerator / denominator:.2f}x"


def numeric(cell):
    """A number, or a string that shows one (`0.25`, `1,024`, `71%`, `1.04x`, `n/a`, `-`)."""
    return isinstance(cell, (int, float)) or bool(re.fullmatch(r"-?[\d,.]+[%x]?|n/a|-", str(cell)))


def markdown_table(headers, rows):
    """A GitHub markdown table; numeric columns are right-aligned, floats get one decimal."""
    def aligned(column):
        return "---:" if all(numeric(row[column]) for row in rows) else "---"

    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join(aligned(i) for i in range(len(headers))) + "|"]
    for row in rows:
        cells = [f"{cell:,.1f}" if isinstance(cell, float) else f"{cell:,}" if isinstance(cell, int)
                 else str(cell) for cell in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def peak_memory_mib():
    """This process's peak resident memory (VmHWM) in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("VmHWM not found in /proc/self/status")


def resident_mib():
    """This process's resident memory now (VmRSS) in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("VmRSS not found in /proc/self/status")


def emit(result):
    """A worker's result: one JSON line, the last line of its stdout."""
    print(json.dumps(result), flush=True)


def run_worker(script, *args, timeout=None, keras_backend=None):
    """Run `python benchmarks/<script> *args` in a fresh process (with `KERAS_BACKEND=keras_backend`
    when given) and return the dict it `emit`s."""
    command = [sys.executable, str(BENCHMARKS / script), *map(str, args)]
    backend = {"KERAS_BACKEND": keras_backend} if keras_backend else {}
    done = subprocess.run(command, cwd=REPO, env={**os.environ, **QUIET_ENV, **backend}, capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


KERAS_BACKENDS = ("tensorflow", "jax", "torch")


def runs_of(frameworks, backends):
    """(label, framework, Keras backend) of each run: the Keras frameworks once per backend, HF once.

    >>> runs_of(["kerasbert", "hf"], ["tensorflow", "torch"])[1]
    ('kerasbert (torch)', 'kerasbert', 'torch')
    """
    return [(f"{framework} ({backend})", framework, backend)
            for framework in frameworks if framework != "hf" for backend in backends] + (
        [("hf", "hf", None)] if "hf" in frameworks else [])
