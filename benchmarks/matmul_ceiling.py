"""The machine's matrix-multiply ceiling: the best GFLOP/s of large square matmuls, fp32 and bf16.

Each framework runs in its own fresh process with all cores: TensorFlow (`tf.linalg.matmul`, eager,
oneDNN) and CPU torch (`torch.mm`, `torch.set_num_threads(cores)`). An n x n by n x n product counts
2 n^3 FLOPs; the ceiling of a dtype is the best rate over sizes, repetitions and both frameworks.
`throughput.py` divides the model's achieved GFLOP/s by it (utilisation).

Run:
    .venv/bin/python benchmarks/matmul_ceiling.py [--sizes 1024 2048 4096] [--repeats 5]
"""

import argparse

from _timing import cores, emit, markdown_table, run_worker, timed

FRAMEWORKS = ("tensorflow", "torch")
DTYPES = ("float32", "bfloat16")


def tensorflow_matmul(n, dtype):
    import tensorflow as tf

    a = tf.cast(tf.random.normal((n, n)), dtype)
    b = tf.cast(tf.random.normal((n, n)), dtype)
    return lambda: tf.linalg.matmul(a, b)[0, 0].numpy()  # eager CPU ops finish before returning


def torch_matmul(n, dtype):
    import torch

    torch.set_num_threads(cores())
    a = torch.randn(n, n).to(getattr(torch, dtype))
    b = torch.randn(n, n).to(getattr(torch, dtype))
    return lambda: torch.mm(a, b)


def worker(framework, sizes, repeats):
    """{dtype: best GFLOP/s} of one framework, in this process."""
    make = tensorflow_matmul if framework == "tensorflow" else torch_matmul
    best = {}
    for dtype in DTYPES:
        rates = [2 * n**3 / seconds / 1e9
                 for n in sizes for seconds in timed(make(n, dtype), repeats, warmup=2)]
        best[dtype] = max(rates)
    return best


def measure(sizes=(1024, 2048, 4096), repeats=5):
    """{framework: {dtype: best GFLOP/s}}, each framework in a fresh process."""
    return {framework: run_worker("matmul_ceiling.py", "--worker", framework, "--sizes", *sizes,
                                  "--repeats", repeats)
            for framework in FRAMEWORKS}


def ceilings(measured):
    """{dtype: best GFLOP/s over frameworks}: the machine's ceiling."""
    return {dtype: max(rates[dtype] for rates in measured.values()) for dtype in DTYPES}


def report(measured):
    rows = [[framework, *(rates[dtype] for dtype in DTYPES), f"{rates['bfloat16'] / rates['float32']:.2f}x"]
            for framework, rates in measured.items()]
    best = ceilings(measured)
    rows.append(["**ceiling** (best of both)", *(best[dtype] for dtype in DTYPES),
                 f"{best['bfloat16'] / best['float32']:.2f}x"])
    return "\n\n".join([
        "## Matrix-multiply ceiling (square matmuls, best GFLOP/s)",
        markdown_table(["framework", "fp32 GFLOP/s", "bf16 GFLOP/s", "bf16 / fp32"], rows),
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        emit(worker(args.worker, args.sizes, args.repeats))
    else:
        print(report(measure(args.sizes, args.repeats)))


if __name__ == "__main__":
    main()
