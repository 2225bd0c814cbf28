"""ModernBERT's unpadded execution: forward time of a padded batch with the feed-forward halves on every position
(`unpadded=False`) and on the real tokens only (`unpadded=True`), against HF transformers' `ModernBertModel` (sdpa
attention, padded: HF unpads only with flash attention, which needs a GPU) on the same weights in the same run.

Model: random weights, float32, `--layers` deep (global attention every third layer, 128-token window elsewhere),
`--width` wide with ModernBERT-base's proportions (heads of 64, GeGLU inner width 1.5 x width). Batches of
`--batch` rows: "mixed" has real lengths spread evenly from `--shortest` to `--longest` (right-padded to the
longest), "full" has every token real (what unpadding costs when there is nothing to save). Each backend runs in a
fresh process: both kerasbert models built with the same weights, one untimed pass each, then `--repeats` passes
each, alternating, median reported; HF runs in its own process on the weights kerasbert exports. The real tokens'
outputs of the two kerasbert models are compared (max |difference|).

Run: `.venv/bin/python benchmarks/unpadded_modernbert.py [--backends tensorflow torch] [--layers 6]`
"""

import argparse
import sys
import tempfile

from _timing import markdown_table, median, ratio, run_worker, timed
from matmul_ceiling import measure, report
from run_all import header


def config(width, layers, longest):
    return {"vocabulary_size": 320, "num_layers": layers, "num_heads": width // 64, "hidden_dim": width,
            "intermediate_dim": width * 3 // 2, "max_sequence_length": longest, "local_attention": 128,
            "global_attn_every_n_layers": 3}


def batches(size, shortest, longest):
    """{"mixed": ..., "full": ...}: token ids and padding masks (numpy, seed 0)."""
    import numpy as np

    rng = np.random.default_rng(0)
    found = {}
    for name, lengths in (("mixed", np.linspace(shortest, longest, size).astype(int)),
                          ("full", np.full(size, longest))):
        mask = (np.arange(longest)[None, :] < lengths[:, None]).astype("int32")
        ids = (rng.integers(3, 320, (size, longest)) * mask).astype("int32")
        found[name] = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}
    return found


def kerasbert_worker(width, layers, size, shortest, longest, repeats, folder):
    import keras
    import numpy as np
    from _timing import emit

    from kerasbert.families import ModernBertBackbone

    padded = ModernBertBackbone(**config(width, layers, longest))
    unpadded = ModernBertBackbone(**config(width, layers, longest), unpadded=True)
    unpadded.set_weights(padded.get_weights())
    padded.export_to_hf(folder)
    result = {}
    for name, inputs in batches(size, shortest, longest).items():
        models = {"padded": padded, "unpadded": unpadded}
        outputs = {key: keras.ops.convert_to_numpy(model(inputs)["sequence_output"]) for key, model in models.items()}
        real = inputs["padding_mask"][..., None]
        result[f"{name} diff"] = float(np.abs((outputs["padded"] - outputs["unpadded"]) * real).max())
        times = {key: [] for key in models}
        for _ in range(repeats):
            for key, model in models.items():
                run = lambda: keras.ops.convert_to_numpy(model(inputs)["sequence_output"])  # noqa: E731
                times[key] += timed(run, repeats=1, warmup=0)
        result.update({f"{name} {key}": median(values) for key, values in times.items()})
        result[f"{name} real"] = float(inputs["padding_mask"].mean())
    emit(result)


def hf_worker(size, shortest, longest, repeats, folder):
    import torch
    import transformers
    from _timing import emit

    model = transformers.AutoModel.from_pretrained(folder, attn_implementation="sdpa").eval()
    result = {}
    for name, inputs in batches(size, shortest, longest).items():
        ids, mask = (torch.tensor(inputs[key], dtype=torch.long) for key in ("token_ids", "padding_mask"))
        with torch.no_grad():
            result[name] = median(timed(lambda: model(input_ids=ids, attention_mask=mask), repeats=repeats))
    emit(result)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "torch"])
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--shortest", type=int, default=64)
    parser.add_argument("--longest", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(header("benchmarks/unpadded_modernbert.py " + " ".join(sys.argv[1:])))
    print(report(measure((1024,), 3)))
    shape = (args.width, args.layers, args.batch, args.shortest, args.longest, args.repeats)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        results = {backend: run_worker("unpadded_modernbert.py", "--kerasbert", *shape, folder, timeout=3600,
                                       keras_backend=backend) for backend in args.backends}
        hf = run_worker("unpadded_modernbert.py", "--hf", *shape[2:], folder, timeout=3600)
    for backend, result in results.items():
        for name in ("mixed", "full"):
            rows.append([backend, name, f"{result[f'{name} real']:.0%}", round(1000 * result[f"{name} padded"]),
                         round(1000 * result[f"{name} unpadded"]),
                         ratio(result[f"{name} padded"], result[f"{name} unpadded"]), round(1000 * hf[name]),
                         ratio(hf[name], result[f"{name} unpadded"]), f"{result[f'{name} diff']:.1e}"])
    print(f"\nwidth {args.width}, {args.layers} layers, batch {args.batch} x {args.longest} tokens, float32, median of "
          f"{args.repeats} forward passes after one untimed\n")
    print(markdown_table(["backend", "batch", "real tokens", "padded ms", "unpadded ms", "speed-up", "HF sdpa ms",
                          "unpadded vs HF", "max diff"], rows))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--kerasbert"]:
        kerasbert_worker(*(int(value) for value in sys.argv[2:8]), sys.argv[8])
    elif sys.argv[1:2] == ["--hf"]:
        hf_worker(*(int(value) for value in sys.argv[2:6]), sys.argv[6])
    else:
        main()
