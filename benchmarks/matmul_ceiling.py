"""The machine's matrix-multiply ceiling: the best GFLOP/s of large square matmuls, fp32 and bf16.

Each framework runs in its own fresh process with all cores: TensorFlow (`tf.linalg.matmul`, eager,
oneDNN), CPU torch (`torch.mm`, `torch.set_num_threads(cores)`) and JAX (`jnp.matmul` under `jax.jit`,
XLA's CPU runtime). An m x k by k x n product counts 2 m k n FLOPs; the ceiling of a dtype is the best
rate over sizes, repetitions and frameworks.

`--preset NAME`: the model-shape ceiling instead, the rate of the four dense matmuls of one encoder
block of that preset at `--rows` (batch x length) rows: [rows, h] x [h, 3h] (fused QKV), [h, h],
[h, i] and [rows, i] x [i, h], total FLOPs over total time. Those are most of a BERT step's FLOPs, so
this is the rate a step can approach on this machine; `throughput.py` divides by it (utilisation).

Run:
    .venv/bin/python benchmarks/matmul_ceiling.py [--sizes 1024 2048 4096] [--repeats 5]
    .venv/bin/python benchmarks/matmul_ceiling.py --preset bert_small_en_uncased --rows 4096
"""

import argparse

from _timing import cores, emit, markdown_table, run_worker, timed

FRAMEWORKS = ("tensorflow", "torch", "jax")
DTYPES = ("float32", "bfloat16")


def tensorflow_matmul(m, k, n, dtype):
    import tensorflow as tf

    a = tf.cast(tf.random.normal((m, k)), dtype)
    b = tf.cast(tf.random.normal((k, n)), dtype)
    return lambda: tf.linalg.matmul(a, b)[0, 0].numpy()  # eager CPU ops finish before returning


def torch_matmul(m, k, n, dtype):
    import torch

    torch.set_num_threads(cores())
    a = torch.randn(m, k).to(getattr(torch, dtype))
    b = torch.randn(k, n).to(getattr(torch, dtype))
    return lambda: torch.mm(a, b)


def jax_matmul(m, k, n, dtype):
    import jax
    import jax.numpy as jnp

    a = jax.random.normal(jax.random.key(0), (m, k)).astype(dtype)
    b = jax.random.normal(jax.random.key(1), (k, n)).astype(dtype)
    product = jax.jit(jnp.matmul)
    return lambda: product(a, b).block_until_ready()


MATMULS = {"tensorflow": tensorflow_matmul, "torch": torch_matmul, "jax": jax_matmul}


def best_rate(framework, shapes, dtype, repeats):
    """GFLOP/s of `shapes` ([(m, k, n)]) run one after another: total FLOPs / summed best times."""
    seconds = sum(min(timed(MATMULS[framework](*shape, dtype), repeats, warmup=2)) for shape in shapes)
    return sum(2 * m * k * n for m, k, n in shapes) / seconds / 1e9


def block_shapes(config, rows):
    """The four dense matmuls of one encoder block on `rows` token rows."""
    h, i = config["hidden_dim"], config["intermediate_dim"]
    return [(rows, h, 3 * h), (rows, h, h), (rows, h, i), (rows, i, h)]


def worker(framework, sizes, repeats, preset=None, rows=None, dtypes=DTYPES):
    """{dtype: best GFLOP/s} of one framework, in this process: square sizes, or a preset's block."""
    if preset:
        from kerasbert.presets.registry import PRESETS

        shapes = [block_shapes(PRESETS[preset]["config"], rows)]
    else:
        shapes = [[(n, n, n)] for n in sizes]
    return {dtype: max(best_rate(framework, group, dtype, repeats) for group in shapes) for dtype in dtypes}


def measure(sizes=(1024, 2048, 4096), repeats=5):
    """{framework: {dtype: best GFLOP/s}}, each framework in a fresh process."""
    return {framework: run_worker("matmul_ceiling.py", "--worker", framework, "--sizes", *sizes,
                                  "--repeats", repeats)
            for framework in FRAMEWORKS}


def measure_model_shapes(preset, rows, repeats=5, dtypes=DTYPES):
    """{framework: {dtype: GFLOP/s}} of `preset`'s block matmuls, each framework in a fresh process."""
    return {framework: run_worker("matmul_ceiling.py", "--worker", framework, "--preset", preset,
                                  "--rows", rows, "--repeats", repeats, "--dtypes", *dtypes)
            for framework in FRAMEWORKS}


def ceilings(measured):
    """{dtype: best GFLOP/s over frameworks}: the machine's ceiling."""
    return {dtype: max(rates[dtype] for rates in measured.values()) for dtype in DTYPES}


def report(measured, title="square matmuls"):
    rows = [[framework, *(rates[dtype] for dtype in DTYPES), f"{rates['bfloat16'] / rates['float32']:.2f}x"]
            for framework, rates in measured.items()]
    best = ceilings(measured)
    rows.append(["**ceiling** (best)", *(best[dtype] for dtype in DTYPES),
                 f"{best['bfloat16'] / best['float32']:.2f}x"])
    return "\n\n".join([
        f"## Matrix-multiply ceiling ({title}, best GFLOP/s)",
        markdown_table(["framework", "fp32 GFLOP/s", "bf16 GFLOP/s", "bf16 / fp32"], rows),
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--preset", help="the model-shape ceiling of this preset instead")
    parser.add_argument("--rows", type=int, default=32 * 128, help="token rows (batch x length) for --preset")
    parser.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES), help=argparse.SUPPRESS)
    parser.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        emit(worker(args.worker, args.sizes, args.repeats, args.preset, args.rows, args.dtypes))
    elif args.preset:
        print(report(measure_model_shapes(args.preset, args.rows, args.repeats),
                     f"{args.preset} block matmuls at {args.rows} rows"))
    else:
        print(report(measure(args.sizes, args.repeats)))


if __name__ == "__main__":
    main()
