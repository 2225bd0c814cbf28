"""Reformer training memory: one training step's peak memory and time with the backward pass keeping every block's
activations (`stored`), recomputing the blocks' insides (`remat=True`) or inverting the blocks (`invert_blocks=True`,
HF's `_ReversibleFunction`), next to HF `ReformerModel` (torch, which always inverts) on the same shape.

Model (random weights, float32, batch 1, every token real): HF's default layer pattern local / LSH repeated to
`--layers`, `--width` wide, heads of 64, feed-forward 2 x width, chunks of 64 seeing the one before, one hash round
(`hash_seed` 0, HF's bucket count for the length), axial positions on a 128 x (length / 128) grid, no dropout
(inverting needs no random draws). The step: `train_on_batch` with SGD on the mean squared `sequence_output`
(kerasbert), `loss.backward()` and an SGD step (HF). Each (mode, length) runs in a fresh process: one untimed
step (tracing), then `--repeats` timed; memory is the peak resident memory (VmHWM) minus the resident memory after
building (the step's own). The machine header (CPU, flags, matmul rates) comes first.

Run: `.venv/bin/python benchmarks/reversible_memory.py [--lengths 4096 8192] [--layers 6] [--backend tensorflow]`
"""

import argparse
import sys

from _timing import markdown_table, median, peak_memory_mib, resident_mib, run_worker, timed
from matmul_ceiling import measure, report
from run_all import header

MODES = ("stored", "remat", "inverted", "hf (torch)")
CHUNK = 64


def settings(length, width, layers):
    from kerasbert.layers.lsh_self_attention import default_num_buckets

    return dict(hidden_dim=width, num_heads=width // 64, head_dim=64, intermediate_dim=2 * width,
                attn_layers=["local", "lsh"] * (layers // 2) + ["local"] * (layers % 2),
                num_buckets=default_num_buckets(length, CHUNK, length), lsh_chunk_length=CHUNK,
                local_chunk_length=CHUNK, hash_seed=0, axial_position_shape=(128, length // 128),
                axial_position_dims=(width // 4, width - width // 4), max_sequence_length=length, dropout=0.0,
                local_attention_dropout=0.0)


def kerasbert_step(mode, length, width, layers):
    """A function running one training step of the kerasbert Reformer in `mode`."""
    import keras
    import numpy as np

    from kerasbert.families import ReformerBackbone

    backbone = ReformerBackbone(vocabulary_size=320, remat=mode == "remat", invert_blocks=mode == "inverted",
                                **settings(length, width, layers))
    ids = np.random.default_rng(0).integers(3, 320, (1, length)).astype("int32")
    data = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    inputs = {name: keras.Input(batch_shape=(1, length), dtype="int32", name=name) for name in data}  # torch builds
    # a functional model by running it on real tensors: a batch of 1, not its stand-in for an unknown batch (83)
    model = keras.Model(inputs, backbone(inputs)["sequence_output"])
    model.compile(optimizer=keras.optimizers.SGD(1e-3), loss="mean_squared_error")
    target = np.zeros((1, length, 2 * width), "float32")
    return lambda: model.train_on_batch(data, target)


def hf_step(length, width, layers):
    """A function running one training step of HF `ReformerModel` (torch) of the same shape."""
    import torch
    import transformers

    ours = settings(length, width, layers)
    config = transformers.ReformerConfig(
        vocab_size=320, hidden_size=width, num_attention_heads=ours["num_heads"], attention_head_size=64,
        feed_forward_size=2 * width, attn_layers=ours["attn_layers"], num_buckets=ours["num_buckets"],
        lsh_attn_chunk_length=CHUNK, local_attn_chunk_length=CHUNK, hash_seed=0,
        axial_pos_shape=list(ours["axial_position_shape"]), axial_pos_embds_dim=list(ours["axial_position_dims"]),
        max_position_embeddings=length, hidden_dropout_prob=0.0, local_attention_probs_dropout_prob=0.0,
        lsh_attention_probs_dropout_prob=0.0, is_decoder=False)
    model = transformers.ReformerModel(config).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    ids = torch.randint(3, 320, (1, length))

    def step():
        optimizer.zero_grad()
        model(input_ids=ids).last_hidden_state.pow(2).mean().backward()
        optimizer.step()
    return step


def worker(mode, length, width, layers, repeats):
    """One run (in its own process): the JSON of its time and memory."""
    from _timing import emit

    step = hf_step(length, width, layers) if mode == "hf (torch)" else kerasbert_step(mode, length, width, layers)
    built = resident_mib()
    seconds = timed(step, repeats=repeats, warmup=1)
    peak = peak_memory_mib()
    emit({"seconds": median(seconds), "peak_mib": peak, "step_mib": peak - built})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--backend", default="tensorflow")
    args = parser.parse_args()
    print(header("benchmarks/reversible_memory.py " + " ".join(sys.argv[1:])))
    print(report(measure((1024,), 3)))
    rows = []
    for length in args.lengths:
        for mode in args.modes:
            try:
                result = run_worker("reversible_memory.py", "--worker", mode, length, args.width, args.layers,
                                    args.repeats, keras_backend=args.backend, timeout=1800)
                rows.append([length, mode, round(result["seconds"], 2), round(result["peak_mib"]),
                             round(result["step_mib"])])
            except RuntimeError as error:
                rows.append([length, mode, "failed", "-", str(error).splitlines()[-1][:60]])
            print(rows[-1], flush=True)
    print(f"\nwidth {args.width}, {args.layers} layers, heads of 64, batch 1, float32, kerasbert on {args.backend}, "
          f"median of {args.repeats} training steps after one untimed\n")
    print(markdown_table(["tokens", "backward", "s/step", "peak memory (MiB)", "step's own (MiB)"], rows))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], *(int(value) for value in sys.argv[3:7]))
    else:
        main()
