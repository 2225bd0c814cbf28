"""Long inputs: peak memory and time of one forward pass of ModernBERT at 1,024 to 8,192 tokens, its local layers
(a 128-token sliding window, computed in blocks) against full attention in every layer.

Two tables, each row a fresh process (TensorFlow backend, float32, batch 1, random weights of the published
shape: the weights do not change the cost):
- the backbone: `ModernBertBackbone()` (22 layers, 768 wide, global attention every third layer) against the same
  backbone with every layer global (`global_attn_every_n_layers=1`);
- one local attention layer (`RotarySelfAttention(window=128)`, 12 heads, 768 wide): in blocks (`banded_attention`,
  what the backbone runs) against the full `[T, T]` scores under the window mask (what it ran before, and what
  it still runs when the probabilities are asked for).
"Forward MiB" is the peak resident memory of the process above its resident memory once the model is built
(VmHWM - VmRSS); the time is the median of `--repeats` `predict_on_batch` calls after one warm-up call.

Run: `.venv/bin/python benchmarks/long_inputs.py [--lengths 1024 4096 8192] [--layer-lengths ... 16384]`
"""

import argparse
import os
import sys

from _timing import emit, markdown_table, median, peak_memory_mib, resident_mib, run_worker, timed
from attention import machine_lines

BACKBONES = {"local layers in blocks (ModernBERT)": {}, "every layer global": {"global_attn_every_n_layers": 1}}
LAYERS = ("blocks", "window mask")


def build(args):
    """The model of this worker: a ModernBERT backbone, or one local attention layer in a functional model."""
    import keras

    import kerasbert as kb
    from kerasbert.layers.rotary_attention import RotarySelfAttention

    if args.variant in BACKBONES:
        return kb.ModernBertBackbone(**BACKBONES[args.variant]), "backbone"
    x = keras.Input((None, 768))
    mask = keras.Input((None,), dtype="int32")
    layer = RotarySelfAttention(num_heads=12, window=128)
    output = layer(x, padding_mask=mask, return_attention_scores=args.variant == "window mask")
    return keras.Model([x, mask], output[0] if isinstance(output, tuple) else output), "layer"


def worker(args):
    """{seconds, forward_mib, peak_mib} of one variant and length, in this fresh process."""
    import numpy as np

    model, kind = build(args)
    rng = np.random.default_rng(0)
    mask = np.ones((1, args.length), "int32")
    if kind == "backbone":
        inputs = {"token_ids": rng.integers(5, 50000, (1, args.length)).astype("int32"),
                  "segment_ids": np.zeros_like(mask), "padding_mask": mask}
    else:
        inputs = [rng.normal(size=(1, args.length, 768)).astype("float32"), mask]
    built = resident_mib()
    times = timed(lambda: model.predict_on_batch(inputs), args.repeats, warmup=1)
    return {"seconds": median(times), "forward_mib": peak_memory_mib() - built, "peak_mib": peak_memory_mib()}


def score_gib(variant, length):
    """About what the window-mask layer's full `[12, T, T]` float32 scores cost (three live copies: scores, masked
    scores, the returned probabilities); 0 for the other variants (not skipped)."""
    return 3 * 12 * length * length * 4 / 2**30 if variant == "window mask" else 0


def available_gib():
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30


def table(variants, lengths, args):
    rows = []
    for length in lengths:
        for variant in variants:
            needs = score_gib(variant, length)
            if needs > available_gib():
                rows.append([variant, length, "skipped", f"needs ~{needs:.0f} GiB of scores", "-"])
                continue
            try:
                result = run_worker("long_inputs.py", "--worker", "--variant", variant, "--length", length,
                                    "--repeats", args.repeats, keras_backend="tensorflow")
            except RuntimeError as error:  # e.g. killed for memory: the row says so
                rows.append([variant, length, "failed", str(error).splitlines()[0][-60:], "-"])
                continue
            rows.append([variant, length, f"{result['seconds']:.2f}", round(result["forward_mib"]),
                         round(result["peak_mib"])])
            print(markdown_table(HEADERS, rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)  # progress
    return markdown_table(HEADERS, rows)


HEADERS = ["variant", "tokens", "seconds", "forward MiB", "process peak MiB"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="*", default=[1024, 4096, 8192], help="none: no backbone table")
    parser.add_argument("--layer-lengths", type=int, nargs="*", default=[1024, 4096, 8192, 16384],
                        help="none: no layer table")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip-matmul-rates", action="store_true", help="leave out the matmul rates")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--variant", choices=[*BACKBONES, *LAYERS], help=argparse.SUPPRESS)
    parser.add_argument("--length", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        emit(worker(args))
        return
    print("\n".join(["## ModernBERT on long inputs (TensorFlow, float32, batch 1)", "", *machine_lines(args), "",
                     "### The backbone (22 layers, 768 wide)", "", table(BACKBONES, args.lengths, args), "",
                     "### One local attention layer (window 128, 12 heads, 768 wide)", "",
                     table(LAYERS, args.layer_lengths, args)]))


if __name__ == "__main__":
    main()
