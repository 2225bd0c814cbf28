"""Fixed-shape training and inference throughput (sequences/s) and GFLOP/s: kerasbert vs keras-hub vs HF.

Same config, random weights, batch 32 x length 128 (no padding), for each preset's config (default
`bert_small_en_uncased`: 4 layers, hidden 512; `all_minilm_l6_v2_en`: 6 layers, hidden 384, 12 heads):
- kerasbert `kerasbert.BertBackbone(**config, dtype=...)`;
- keras-hub `keras_hub.models.BertBackbone` with the same sizes (it has no activation, epsilon or
  attention-dropout arguments: tanh GELU, its own epsilon, dropout 0.1 everywhere);
- HF transformers `BertModel(BertConfig(...))` on CPU torch, `torch.set_num_threads(cores)`, its
  default attention implementation.
Each backbone gets the same head: `Dense(2)` (float32) on the pooled `[CLS]` output, softmax
cross-entropy. Training step = forward + backward + AdamW (lr 5e-5, weight decay 0.01), dropout 0.1 on:
Keras models are compiled (`jit_compile` = `--jit`) and run `train_on_batch` on one fixed batch; torch
runs a plain loop (`loss.backward(); optimizer.step(); zero_grad`). Inference: Keras `predict_on_batch`,
torch `model.eval()` under `torch.inference_mode()`. `--dtype mixed_bfloat16` passes `dtype=` to the
Keras backbones and runs torch under `torch.autocast("cpu", torch.bfloat16)`; `--jit` has no torch
counterpart (HF stays eager). Each framework runs in its own fresh process; `--warmup` steps are not
timed; each of `--repeats` timings covers `--steps` steps; tables give medians.

Model FLOPs, counted analytically (embeddings, pooler, head and element-wise ops not counted), per
sequence of T tokens through L layers of hidden h and intermediate i:
    forward  = L * T * [2 * (4*h*h + 2*h*i)  +  2 * 2*T*h]
               (Q, K, V, output and the two FFN matmuls)   (scores Q K^T and the weighted sum of V)
    training = 3 * forward (the backward pass costs two forward passes).
Utilisation = achieved GFLOP/s / the machine's matmul ceiling of the same dtype (`matmul_ceiling.py`).

The Keras frameworks run once per `--backends` entry (KERAS_BACKEND=tensorflow, jax, torch): on JAX
the step is always `jax.jit`-compiled (Keras' default there, which the task models use; with
`jit_compile=False` Keras runs JAX op by op), on torch always eager (`--jit` would be torch.compile,
which the task models do not use); `--jit` applies to TensorFlow. The ratios take kerasbert's best
backend against keras-hub on that backend and against HF; "model-shape ceiling" is the best rate of
the model's own matrix multiplies (`matmul_ceiling.py --preset`), the ceiling a BERT step can reach.

Run:
    .venv/bin/python benchmarks/throughput.py [--presets bert_small_en_uncased all_minilm_l6_v2_en]
        [--repeats 5] [--steps 5] [--warmup 3] [--jit] [--dtype mixed_bfloat16]
        [--backends tensorflow jax torch]
Smoke test: --presets bert_tiny_en_uncased --repeats 1 --steps 2 --warmup 1 --ceiling-sizes 256
"""

import argparse

import matmul_ceiling
from _timing import KERAS_BACKENDS, cores, emit, markdown_table, median, ratio, run_worker, runs_of, timed

FRAMEWORKS = ("kerasbert", "keras-hub", "hf")
DEFAULT_PRESETS = ("bert_small_en_uncased", "all_minilm_l6_v2_en")
NUM_CLASSES = 2


def random_batch(config, batch_size, length):
    import numpy as np

    rng = np.random.default_rng(0)
    return {
        "token_ids": rng.integers(1, config["vocabulary_size"], (batch_size, length), dtype="int32"),
        "segment_ids": np.zeros((batch_size, length), "int32"),
        "padding_mask": np.ones((batch_size, length), "int32"),
    }, rng.integers(0, NUM_CLASSES, batch_size)


def keras_steps(framework, config, batch, labels, dtype, jit):
    """(train step, inference step) of a compiled Keras classifier on the backbone of `framework`."""
    import keras

    if framework == "kerasbert":
        import kerasbert

        backbone = kerasbert.BertBackbone(**config, dtype=dtype)
    else:
        import keras_hub

        sizes = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
                 "dropout", "max_sequence_length", "num_segments")
        backbone = keras_hub.models.BertBackbone(**{key: config[key] for key in sizes}, dtype=dtype)
    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in batch}
    logits = keras.layers.Dense(NUM_CLASSES, dtype="float32")(backbone(inputs)["pooled_output"])
    model = keras.Model(inputs, logits)
    # JAX: jit_compile=False would run every op eagerly; Keras' default there (and the task models') jits.
    # torch: jit_compile=True would be torch.compile, which the task models do not use.
    jit_compile = {"jax": True, "torch": False}.get(keras.backend.backend(), jit)
    model.compile(optimizer=keras.optimizers.AdamW(5e-5, weight_decay=0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=jit_compile)
    return (lambda: model.train_on_batch(batch, labels)), (lambda: model.predict_on_batch(batch))


def torch_steps(config, batch, labels, dtype):
    """(train step, inference step) of HF `BertModel` + a linear head in CPU torch."""
    import torch
    from transformers import BertConfig, BertModel

    torch.set_num_threads(cores())
    model = BertModel(BertConfig(
        vocab_size=config["vocabulary_size"], hidden_size=config["hidden_dim"],
        num_hidden_layers=config["num_layers"], num_attention_heads=config["num_heads"],
        intermediate_size=config["intermediate_dim"], hidden_act=config["activation"],
        hidden_dropout_prob=config["dropout"], attention_probs_dropout_prob=config["attention_dropout"],
        max_position_embeddings=config["max_sequence_length"], type_vocab_size=config["num_segments"],
        layer_norm_eps=config["layer_norm_epsilon"],
    ))
    head = torch.nn.Linear(config["hidden_dim"], NUM_CLASSES)
    optimizer = torch.optim.AdamW([*model.parameters(), *head.parameters()], lr=5e-5, weight_decay=0.01)
    inputs = {"input_ids": torch.from_numpy(batch["token_ids"]).long(),
              "token_type_ids": torch.from_numpy(batch["segment_ids"]).long(),
              "attention_mask": torch.from_numpy(batch["padding_mask"]).long()}
    targets = torch.from_numpy(labels).long()
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "mixed_bfloat16")

    def train():
        model.train()
        with autocast:
            logits = head(model(**inputs).pooler_output)
        torch.nn.functional.cross_entropy(logits.float(), targets).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def infer():
        model.eval()
        with torch.inference_mode(), autocast:
            return head(model(**inputs).pooler_output)

    return train, infer


def worker(framework, preset, args):
    """{config, train, infer}: sequences/s of each timed repetition, in this process."""
    from kerasbert.presets.registry import PRESETS

    config = PRESETS[preset]["config"]
    batch, labels = random_batch(config, args.batch_size, args.sequence_length)
    if framework == "hf":
        train, infer = torch_steps(config, batch, labels, args.dtype)
    else:
        train, infer = keras_steps(framework, config, batch, labels, args.dtype, args.jit)
    result = {"config": config}
    for mode, step in (("train", train), ("infer", infer)):
        if mode in args.modes:
            for _ in range(args.warmup):
                step()
            times = timed(lambda: [step() for _ in range(args.steps)], args.repeats, warmup=0)
            result[mode] = [args.batch_size * args.steps / seconds for seconds in times]
    return result


def forward_flops(config, length):
    """Matmul FLOPs of one forward pass of one sequence (see the module docstring)."""
    h, i = config["hidden_dim"], config["intermediate_dim"]
    return config["num_layers"] * length * (2 * (4 * h * h + 2 * h * i) + 2 * 2 * length * h)


def measure(args):
    """{preset: {label: worker result}}, each run in a fresh process (see `runs_of`)."""
    options = ["--modes", *args.modes, "--repeats", args.repeats, "--steps", args.steps,
               "--warmup", args.warmup, "--batch-size", args.batch_size,
               "--sequence-length", args.sequence_length, "--dtype", args.dtype]
    if args.jit:
        options.append("--jit")
    return {preset: {label: run_worker("throughput.py", "--worker", framework, "--preset", preset, *options,
                                       keras_backend=backend)
                     for label, framework, backend in runs_of(args.frameworks, args.backends)}
            for preset in args.presets}


def model_shape_ceilings(args):
    """{preset: best GFLOP/s of its own matmuls, over TF, torch and JAX} (matmul_ceiling.py --config)."""
    dtype = "bfloat16" if args.dtype == "mixed_bfloat16" else "float32"
    return {preset: max(rates[dtype] for rates in matmul_ceiling.measure_model_shapes(
                preset, args.batch_size * args.sequence_length, args.repeats, [dtype]).values())
            for preset in args.presets}


def report(args, ceiling):
    """Markdown: throughput, GFLOP/s and utilisation per preset and run, then the ratios."""
    measured = measure(args)
    ceiling_gflops = ceiling["bfloat16" if args.dtype == "mixed_bfloat16" else "float32"]
    shape_ceilings = model_shape_ceilings(args)
    settings = (f"batch {args.batch_size} x length {args.sequence_length}, {args.dtype}, "
                f"Keras jit_compile={args.jit} (JAX: always), median of {args.repeats} x {args.steps} steps "
                f"after {args.warmup} warm-up steps; square-matmul ceiling {ceiling_gflops:,.0f} GFLOP/s")
    rows, ratio_rows = [], []
    for preset, results in measured.items():
        medians = {}
        for label, result in results.items():
            flops = forward_flops(result["config"], args.sequence_length)
            row = [preset, label]
            for mode, multiple in (("train", 3), ("infer", 1)):
                if mode in result:
                    speed = medians[label, mode] = median(result[mode])
                    gflops = speed * multiple * flops / 1e9
                    row += [speed, gflops, f"{100 * gflops / shape_ceilings[preset]:.0f}%"]
                else:
                    row += ["-", "-", "-"]
            rows.append(row)
        for mode in args.modes:
            ours = {backend: medians.get((f"kerasbert ({backend})", mode)) for backend in args.backends}
            best = max((backend for backend in ours if ours[backend]), key=ours.get, default=None)
            if best is None:
                continue
            ratio_rows.append([preset, mode, best, ratio(ours[best], medians.get((f"keras-hub ({best})", mode))),
                               ratio(ours[best], medians.get(("hf", mode))),
                               *(ratio(ours[backend], ours.get("tensorflow")) for backend in args.backends)])
    return "\n\n".join([
        f"## Fixed-shape throughput ({settings})",
        "Model-shape ceilings (the best rate of each preset's own matmuls, any framework): "
        + ", ".join(f"{preset} {rate:,.0f} GFLOP/s" for preset, rate in shape_ceilings.items())
        + ". Utilisation is against it.",
        markdown_table(["preset", "run", "train seq/s", "train GFLOP/s", "train util.",
                        "infer seq/s", "infer GFLOP/s", "infer util."], rows),
        markdown_table(["preset", "mode", "kerasbert's best backend", "/ keras-hub (same backend)", "/ HF",
                        *(f"{backend} / tensorflow" for backend in args.backends)], ratio_rows),
    ])


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=list(DEFAULT_PRESETS))
    parser.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, default=list(FRAMEWORKS))
    parser.add_argument("--backends", nargs="+", choices=KERAS_BACKENDS, default=["tensorflow"],
                        help="Keras backends for kerasbert and keras-hub")
    parser.add_argument("--modes", nargs="+", choices=("train", "infer"), default=["train", "infer"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--jit", action="store_true", help="Keras jit_compile=True (XLA)")
    parser.add_argument("--dtype", choices=("float32", "mixed_bfloat16"), default="float32")
    parser.add_argument("--ceiling-sizes", type=int, nargs="+", default=[1024, 2048, 4096],
                        help="matmul sizes for the ceiling (see matmul_ceiling.py)")
    parser.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    parser.add_argument("--preset", help=argparse.SUPPRESS)
    return parser


def main():
    args = build_parser().parse_args()
    if args.worker:
        emit(worker(args.worker, args.preset, args))
    else:
        ceiling = matmul_ceiling.ceilings(matmul_ceiling.measure(args.ceiling_sizes))
        print(report(args, ceiling))


if __name__ == "__main__":
    main()
