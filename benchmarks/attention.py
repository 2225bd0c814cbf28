"""Fused against explicit attention: speed per backend and length, peak memory, and training MFU on a GPU.

kerasbert's `MultiHeadSelfAttention` runs `keras.ops.dot_product_attention` (each backend's fused kernel:
torch `scaled_dot_product_attention`, `jax.nn.dot_product_attention`, TensorFlow's composed ops) when nothing
needs the probabilities, and the explicit matmul + softmax + matmul otherwise (`fused_attention=False`).
This script times both on the same model: a BERT encoder made of kerasbert's layers, exactly as
`BertBackbone` composes them (`TokenSegmentPositionEmbedding`, `TransformerEncoderBlock`s; built from the
layers so that the script also runs where TensorFlow is not installed, as on the GPU machines), random
weights, a `Dense(2)` head on `[CLS]`, every token real.

- `infer`: `predict_on_batch` at batch `--batch-size` x each `--lengths` (the task models' compiled predict:
  tf.function on TensorFlow, jit on JAX, eager on torch); texts/s, median of `--repeats` x `--steps`.
- `train`: `train_on_batch` (AdamW) with attention dropout 0 (with attention dropout in training the
  explicit path runs: the fused kernels take no dropout), hidden dropout 0.1.
- Peak memory: the worker's peak resident memory (CPU) or the device's peak bytes in use (GPU), each run
  in its own fresh process.
- MFU on a GPU: model FLOPs (`throughput.forward_flops`, x3 for training) per second against the GPU's
  dense bf16 peak (`PEAK_BF16_TFLOPS`, NVIDIA's datasheet numbers).

Every report starts with the machine's CPU flags and the fp32/bf16 matmul rate of each framework
(`matmul_ceiling.py`, 1024^3), so ratios are read against what the machine can do.

Run (CPU, about 10 minutes on 2 cores):
    .venv/bin/python benchmarks/attention.py --preset all_minilm_l6_v2_en --lengths 128 512 --batch-size 8
GPU (bert-base, bf16 training, MFU):
    KERAS_BACKEND=jax python benchmarks/attention.py --preset bert_base_en_uncased --modes train \\
        --dtype mixed_bfloat16 --backends jax torch --lengths 128 --batch-size 256
"""

import argparse
import os
import platform
import sys

import matmul_ceiling
from _timing import KERAS_BACKENDS, emit, markdown_table, median, peak_memory_mib, run_worker, timed
from throughput import forward_flops

from kerasbert.presets.registry import PRESETS  # the sizes as data: no TensorFlow needed
from kerasbert.training.cpu_features import cpu_flags

PEAK_BF16_TFLOPS = {"H100": 989.4, "H200": 989.4, "A100": 312.0, "L4": 121.0}  # dense, no sparsity
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
PRESET_CHOICES = ("all_minilm_l6_v2_en", "bert_tiny_en_uncased", "bert_small_en_uncased", "bert_base_en_uncased")


def build_model(sizes, dtype, fused, length, torch_compile=False):
    """A compiled BERT encoder + `Dense(2)` classifier from kerasbert's layers, attention fused or not;
    `torch_compile`: the torch backend's steps through `torch.compile` (Keras' `jit_compile=True`)."""
    import keras

    from kerasbert.layers.attention import MultiHeadSelfAttention
    from kerasbert.layers.embedding import TokenSegmentPositionEmbedding
    from kerasbert.layers.encoder_block import TransformerEncoderBlock

    inputs = {name: keras.Input((length,), dtype="int32", name=name)
              for name in ("token_ids", "segment_ids", "padding_mask")}
    x = TokenSegmentPositionEmbedding(sizes["vocabulary_size"], sizes["hidden_dim"], dtype=dtype)(
        inputs["token_ids"], inputs["segment_ids"])
    for _ in range(sizes["num_layers"]):
        x = TransformerEncoderBlock(sizes["num_heads"], sizes["intermediate_dim"], attention_dropout=0.0,
                                    dtype=dtype)(x, padding_mask=inputs["padding_mask"])
    logits = keras.layers.Dense(2, dtype="float32")(x[:, 0, :])
    model = keras.Model(inputs, logits)
    for layer in model._flatten_layers():
        if isinstance(layer, MultiHeadSelfAttention):
            layer.fused_attention = fused
    jit = {"jax": True, "torch": torch_compile, "tensorflow": False}[keras.backend.backend()]
    model.compile(optimizer=keras.optimizers.AdamW(5e-5, weight_decay=0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=jit)
    return model


def device_peak_mib():
    """The accelerator's peak bytes in use in MiB, or None on a CPU."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        device = jax.devices()[0]
        return device.memory_stats()["peak_bytes_in_use"] / 2**20 if device.platform == "gpu" else None
    if keras.backend.backend() == "torch":
        import torch

        return torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None
    return None


def accelerator():
    """The GPU's name, or None."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        device = jax.devices()[0]
        return device.device_kind if device.platform == "gpu" else None
    if keras.backend.backend() == "torch":
        import torch

        return torch.cuda.get_device_name() if torch.cuda.is_available() else None
    import tensorflow as tf

    return "GPU" if tf.config.list_physical_devices("GPU") else None


def worker(args):
    """{texts_per_s, peak_mib, device}: one mode, path and length, in this fresh process."""
    import numpy as np

    sizes = PRESETS[args.preset]["config"]
    model = build_model(sizes, args.dtype, args.path == "fused", args.length, args.torch_compile)
    rng = np.random.default_rng(0)
    shape = (args.batch_size, args.length)
    batch = {"token_ids": rng.integers(1, sizes["vocabulary_size"], shape, dtype="int32"),
             "segment_ids": np.zeros(shape, "int32"), "padding_mask": np.ones(shape, "int32")}
    labels = rng.integers(0, 2, args.batch_size)
    step = (lambda: model.train_on_batch(batch, labels)) if args.mode == "train" \
        else (lambda: model.predict_on_batch(batch))
    for _ in range(args.warmup):
        step()
    times = timed(lambda: [step() for _ in range(args.steps)], args.repeats, warmup=0)
    return {"texts_per_s": [args.batch_size * args.steps / seconds for seconds in times],
            "peak_mib": device_peak_mib() or peak_memory_mib(), "device": accelerator()}


def peak_tflops(device):
    return next((peak for name, peak in PEAK_BF16_TFLOPS.items() if device and name in device), None)


def gpu_matmul_line():
    """The measured bf16 rate of an 8192^3 product on the GPU (torch), or None without one."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    a, b = (torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    seconds = min(timed(lambda: (a @ b, torch.cuda.synchronize()), repeats=10, warmup=3))
    return f"- {torch.cuda.get_device_name()}: bf16 matmul 8192^3 {2 * 8192**3 / seconds / 1e12:,.0f} TFLOP/s measured"


def machine_lines(args):
    flags = cpu_flags()
    lines = [f"- CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores online, flags: "
             + (", ".join(flag for flag in CPU_FLAGS if flag in flags) or "none of " + ", ".join(CPU_FLAGS))]
    gpu = gpu_matmul_line()
    if gpu:
        lines.append(gpu)
    if not args.skip_matmul_rates:
        for framework, rates in matmul_ceiling.measure(sizes=(1024,), repeats=3).items():
            lines.append(f"- {framework} matmul 1024^3: fp32 {rates['float32']:,.0f} GFLOP/s, "
                         f"bf16 {rates['bfloat16']:,.0f} GFLOP/s")
    return lines


def report(args):
    """Markdown: one row per backend, mode and length; fused and explicit side by side."""
    rows = []
    for backend in args.backends:
        for mode in args.modes:
            for length in args.lengths:
                results = {path: run_worker("attention.py", "--worker", "--preset", args.preset, "--mode", mode,
                                            "--path", path, "--length", length, "--batch-size", args.batch_size,
                                            "--dtype", args.dtype, "--repeats", args.repeats,
                                            "--steps", args.steps, "--warmup", args.warmup,
                                            *(["--torch-compile"] if args.torch_compile else []),
                                            keras_backend=backend)
                           for path in ("fused", "explicit")}
                speeds = {path: median(result["texts_per_s"]) for path, result in results.items()}
                device = results["fused"]["device"]
                flops = forward_flops(PRESETS[args.preset]["config"], length) * (3 if mode == "train" else 1)
                peak = peak_tflops(device)
                mfu = [f"{100 * speeds[path] * flops / 1e12 / peak:.1f}%" if peak else "-"
                       for path in ("fused", "explicit")]
                rows.append([backend, device or "CPU", mode, length, speeds["fused"], speeds["explicit"],
                             f"{speeds['fused'] / speeds['explicit']:.2f}x", results["fused"]["peak_mib"],
                             results["explicit"]["peak_mib"], *mfu])
                print(markdown_table(HEADERS, rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)  # progress
    settings = (f"{args.preset}, {args.dtype}, batch {args.batch_size}, median of {args.repeats} x {args.steps} "
                f"steps after {args.warmup} warm-up steps" + (", torch steps compiled" if args.torch_compile else ""))
    return "\n".join([f"## Fused vs explicit attention ({settings})", "", *machine_lines(args), "",
                      markdown_table(HEADERS, rows)])


HEADERS = ["backend", "device", "mode", "length", "fused texts/s", "explicit texts/s", "fused / explicit",
           "fused peak MiB", "explicit peak MiB", "fused MFU (bf16 peak)", "explicit MFU"]


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=PRESET_CHOICES, default="all_minilm_l6_v2_en")
    parser.add_argument("--backends", nargs="+", choices=KERAS_BACKENDS, default=list(KERAS_BACKENDS))
    parser.add_argument("--modes", nargs="+", choices=("infer", "train"), default=["infer"])
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--dtype", choices=("float32", "mixed_bfloat16"), default="float32")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--torch-compile", action="store_true",
                        help="torch backend: steps through torch.compile (Keras jit_compile=True); default eager")
    parser.add_argument("--skip-matmul-rates", action="store_true", help="leave out the matmul rates")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=("infer", "train"), help=argparse.SUPPRESS)
    parser.add_argument("--path", choices=("fused", "explicit"), help=argparse.SUPPRESS)
    parser.add_argument("--length", type=int, help=argparse.SUPPRESS)
    return parser


def main():
    args = build_parser().parse_args()
    if args.worker:
        emit(worker(args))
    else:
        print(report(args))


if __name__ == "__main__":
    main()
