"""The benchmark suite of issue 6 in one command: prints markdown tables and writes `benchmarks/results.md`.

Parts (each also runnable alone, see its docstring): `matmul` (matmul_ceiling.py), `throughput`
(throughput.py, once per `--variants` entry: dtype, `+jit` for Keras XLA; Keras frameworks once per
`--backends` entry; it also runs `matmul`, whose ceiling its utilisation needs), `tokenization`
(tokenization.py), `finetune` (finetune_uci.py, once per `--finetune-dtypes` entry) and `import`
(import_time.py). Every measurement runs in a fresh subprocess; this process imports no framework.
The results file starts with the date, the machine (CPU model, cores, memory), the library versions,
the git commit and the command; it is rewritten after each part, so an interrupted run keeps the
parts done.

Run (the full suite; roughly 2 hours on 2 quiet cores, mostly throughput: an estimate):
    .venv/bin/python benchmarks/run_all.py
Smoke test (about 5 minutes):
    .venv/bin/python benchmarks/run_all.py --repeats 1 --steps 2 --warmup 1 --ceiling-sizes 256
        --presets bert_tiny_en_uncased --variants float32 --limit 64 --finetune-dtypes float32
"""

import argparse
import datetime
import importlib.metadata
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import finetune_uci
import import_time
import matmul_ceiling
import throughput
import tokenization
from _timing import KERAS_BACKENDS, REPO, cores

PARTS = ("matmul", "throughput", "tokenization", "finetune", "import")
VARIANTS = ("float32", "float32+jit", "mixed_bfloat16", "mixed_bfloat16+jit")
PACKAGES = ("kerasbert", "tensorflow", "tensorflow-text", "keras", "keras-hub", "torch", "transformers",
            "tokenizers", "numpy")
CPU_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")


def proc_field(path, name):
    """The value of the first `name: value` line of a /proc file."""
    for line in Path(path).read_text().splitlines():
        if line.startswith(name):
            return line.split(":", 1)[1].strip()
    return "unknown"


def header(command):
    flags = proc_field("/proc/cpuinfo", "flags").split()
    memory_gib = int(proc_field("/proc/meminfo", "MemTotal").split()[0]) / 2**20
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    changed = subprocess.run(["git", "status", "--porcelain", "--", "kerasbert"], cwd=REPO,
                             capture_output=True, text=True).stdout.strip()
    versions = ", ".join(f"{name} {importlib.metadata.version(name)}" for name in PACKAGES)
    return "\n".join([
        "# Benchmark results",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
        f"- machine: {proc_field('/proc/cpuinfo', 'model name')}, {cores()} cores usable "
        f"({os.cpu_count()} online), {memory_gib:.0f} GiB memory, "
        f"CPU features: {', '.join(f for f in CPU_FEATURES if f in flags) or 'none of ' + str(CPU_FEATURES)}",
        f"- versions: Python {platform.python_version()}, {versions}",
        f"- kerasbert tree: commit {commit}" + (" with uncommitted changes in kerasbert/" if changed else ""),
        f"- command: `{command}`",
    ])


def sections(args):
    """Yield (part, markdown section) in order."""
    measured = None
    if {"matmul", "throughput"} & set(args.parts) or ("finetune" in args.parts
                                                      and "mixed_bfloat16" in args.finetune_dtypes):
        measured = matmul_ceiling.measure(args.ceiling_sizes, args.repeats)
        yield "matmul", matmul_ceiling.report(measured)
    if "throughput" in args.parts:
        for variant in args.variants:
            dtype, _, jit = variant.partition("+")
            frameworks, backends, note = frameworks_for(dtype, throughput.FRAMEWORKS, args.backends, measured)
            options = ["--presets", *args.presets, "--frameworks", *frameworks, "--backends", *backends,
                       "--repeats", str(args.repeats),
                       "--steps", str(args.steps), "--warmup", str(args.warmup), "--dtype", dtype]
            options += ["--jit"] if jit else []
            yield f"throughput {variant}", note + throughput.report(
                throughput.build_parser().parse_args(options), matmul_ceiling.ceilings(measured))
    if "tokenization" in args.parts:
        yield "tokenization", tokenization.report(args.repeats, args.limit)
    if "finetune" in args.parts:
        for dtype in args.finetune_dtypes:
            frameworks, backends, note = frameworks_for(dtype, args.finetune_frameworks, args.backends, measured)
            yield f"finetune {dtype}", note + finetune_uci.report(dtype, args.limit, frameworks,
                                                                backends=backends)
    if "import" in args.parts:
        yield "import", import_time.report(args.repeats)


def frameworks_for(dtype, frameworks, backends, measured):
    """The frameworks and Keras backends to run in `dtype`, and a note on any left out.

    HF and the torch backend run on CPU torch: where torch's bf16 matmul is under a quarter of its
    fp32 rate (no bf16 kernels for the CPU, as on AVX2-only Zen 3: see `results.md`), their bf16 runs
    would take hours and measure nothing but that, so they are left out and the note says why.
    """
    torch_rates = measured["torch"] if measured else None
    if dtype == "float32" or not torch_rates or torch_rates["bfloat16"] >= 0.25 * torch_rates["float32"]:
        return list(frameworks), list(backends), ""
    note = (f"_HF transformers and the torch backend left out: CPU torch multiplies bf16 matrices at "
            f"{torch_rates['bfloat16']:.1f} GFLOP/s against {torch_rates['float32']:.1f} in fp32 on this "
            f"machine (no bf16 kernels for its CPU)._\n\n")
    return [f for f in frameworks if f != "hf"], [b for b in backends if b != "torch"], note


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions (medians; ceiling: best)")
    parser.add_argument("--steps", type=int, default=5, help="throughput: steps per timed repetition")
    parser.add_argument("--warmup", type=int, default=3, help="throughput: untimed steps first")
    parser.add_argument("--presets", nargs="+", default=list(throughput.DEFAULT_PRESETS),
                        help="throughput: the configs")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS,
                        default=["float32", "float32+jit", "mixed_bfloat16"], help="throughput: dtype[+jit]")
    parser.add_argument("--finetune-dtypes", nargs="+", choices=("float32", "mixed_bfloat16"),
                        default=["float32", "mixed_bfloat16"])
    parser.add_argument("--backends", nargs="+", choices=KERAS_BACKENDS, default=list(KERAS_BACKENDS),
                        help="throughput and finetune: the Keras backends of kerasbert and keras-hub")
    parser.add_argument("--finetune-frameworks", nargs="+", choices=finetune_uci.FRAMEWORKS,
                        default=list(finetune_uci.FRAMEWORKS))
    parser.add_argument("--ceiling-sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--limit", type=int, help="tokenization and finetune: first N rows (smoke tests)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results.md")
    args = parser.parse_args()

    command = shlex.join([os.path.relpath(sys.executable, REPO), "benchmarks/run_all.py", *sys.argv[1:]])
    document = [header(command)]
    print(document[0], flush=True)
    for section in timed_sections(args):
        document.append(section)
        print(f"\n{section}", flush=True)
        args.output.write_text("\n\n".join(document) + "\n")
    print(f"\nwrote {args.output}")


def timed_sections(args):
    """`sections(args)`, each section ending with the minutes its part took."""
    start = time.perf_counter()
    for part, section in sections(args):
        yield f"{section}\n\n_{part}: {(time.perf_counter() - start) / 60:.1f} min_"
        start = time.perf_counter()


if __name__ == "__main__":
    main()
