"""Long inputs: peak memory and time of one forward pass at 4,096 / 8,192 / 16,384 tokens, the long families'
attention (Reformer's LSH and local, ModernBERT's local layers, Longformer's window, BigBird's blocks) against full
attention of the same width and depth.

Models (random weights, float32, batch 1, every token real, `--width` wide, `--layers` deep, heads of 64):
- `reformer lsh`: `ReformerBackbone` with LSH attention in every layer (chunks of 64 seeing the one before,
  `--hashes` hash rounds, HF's bucket count for the length: `default_num_buckets`), axial positions;
- `reformer local`: the same with chunked local attention in every layer (chunks of 64, one before);
- `bert full`: `BertBackbone` (full attention, `keras.ops.dot_product_attention`) with a position table as long;
- `modernbert`: `ModernBertBackbone` with `global_attn_every_n_layers=2` (layer 0 global, layer 1 local with a
  128-token window, computed in blocks: `long_inputs.py` measures ModernBERT-base and its local layer alone);
- `longformer`: `LongformerBackbone` with longformer-base-4096's window (512: 256 either side), `<s>` global;
- `bigbird`: `BigBirdBackbone` with bigbird-roberta-base's blocks (64 tokens, 3 random: 512 keys per query).
The feed-forward width is 4 x `--width` for all. Each (model, length) runs in a fresh process: it builds the
model, runs one untimed forward pass (eager `model(inputs)`, TensorFlow unless `--backend`), then times
`--repeats` more and reports the median; memory is the process's peak resident memory (VmHWM, which the untimed
pass already reaches) and that minus the resident memory after building (the forward pass's own). A run that
fails (e.g. killed for memory) is a row saying so. The machine header (CPU, flags, matmul rates) comes first.

Run: `.venv/bin/python benchmarks/long_attention.py [--lengths 4096 8192 16384] [--width 256] [--layers 2]`
"""

import argparse
import sys

from _timing import markdown_table, median, peak_memory_mib, resident_mib, run_worker, timed
from matmul_ceiling import measure, report
from run_all import header

MODELS = ("reformer lsh", "reformer local", "bert full", "modernbert", "longformer", "bigbird")
CHUNK = 64


def build(model, length, width, layers, hashes):
    """The backbone `model` (see the module docstring) for inputs of `length` tokens."""
    from kerasbert.families import (BertBackbone, BigBirdBackbone, LongformerBackbone, ModernBertBackbone,
                                    ReformerBackbone)
    from kerasbert.layers.lsh_self_attention import default_num_buckets

    heads = width // 64
    if model.startswith("reformer"):
        kind = model.split()[1]
        return ReformerBackbone(
            vocabulary_size=320, hidden_dim=width, num_heads=heads, head_dim=64, intermediate_dim=4 * width,
            attn_layers=[kind] * layers, num_hashes=hashes, num_buckets=default_num_buckets(length, CHUNK, length),
            lsh_chunk_length=CHUNK, local_chunk_length=CHUNK, hash_seed=0, axial_position_shape=(128, 128),
            axial_position_dims=(width // 4, width - width // 4), max_sequence_length=16384, dropout=0.0,
            local_attention_dropout=0.0)
    if model == "bert full":
        return BertBackbone(vocabulary_size=320, num_layers=layers, num_heads=heads, hidden_dim=width,
                            intermediate_dim=4 * width, max_sequence_length=length, dropout=0.0)
    if model == "longformer":
        return LongformerBackbone(vocabulary_size=320, num_layers=layers, num_heads=heads, hidden_dim=width,
                                  intermediate_dim=4 * width, max_sequence_length=length + 2, dropout=0.0,
                                  attention_window=512, global_tokens="cls")
    if model == "bigbird":
        return BigBirdBackbone(vocabulary_size=320, num_layers=layers, num_heads=heads, hidden_dim=width,
                               intermediate_dim=4 * width, max_sequence_length=length, dropout=0.0, block_size=64,
                               num_random_blocks=3)
    return ModernBertBackbone(vocabulary_size=320, num_layers=layers, num_heads=heads, hidden_dim=width,
                              intermediate_dim=4 * width, max_sequence_length=length, local_attention=128,
                              global_attn_every_n_layers=2)


def worker(model, length, width, layers, hashes, repeats):
    """One run (in its own process): the JSON of its time and memory."""
    import keras
    import numpy as np
    from _timing import emit

    backbone = build(model, length, width, layers, hashes)
    ids = np.random.default_rng(0).integers(3, 320, (1, length)).astype("int32")
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    built = resident_mib()
    seconds = timed(lambda: keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"]), repeats=repeats, warmup=1)
    peak = peak_memory_mib()
    emit({"seconds": median(seconds), "peak_mib": peak, "forward_mib": peak - built})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[4096, 8192, 16384])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hashes", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--backend", default="tensorflow")
    args = parser.parse_args()
    print(header("benchmarks/long_attention.py " + " ".join(sys.argv[1:])))
    print(report(measure((1024,), 3)))
    rows = []
    for length in args.lengths:
        for model in args.models:
            try:
                result = run_worker("long_attention.py", "--worker", model, length, args.width, args.layers,
                                    args.hashes, args.repeats, keras_backend=args.backend, timeout=1800)
                rows.append([length, model, round(result["seconds"], 2), round(result["peak_mib"]),
                             round(result["forward_mib"])])
            except RuntimeError as error:
                rows.append([length, model, "failed", "-", str(error).splitlines()[-1][:60]])
            print(rows[-1], flush=True)
    print(f"\nwidth {args.width}, {args.layers} layers, heads of 64, batch 1, float32, {args.backend}, "
          f"median of {args.repeats} forward passes after one untimed\n")
    print(markdown_table(["tokens", "model", "s/forward", "peak memory (MiB)", "forward's own (MiB)"], rows))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        model = sys.argv[2]
        worker(model, *(int(value) for value in sys.argv[3:8]))
    else:
        main()
