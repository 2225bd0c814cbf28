"""GradCache's memory and time: all-MiniLM-L6-v2 trained on (question, paragraph) pairs of SQuAD v1.1 (../shared/data)
with multiple-negatives ranking, the plain loss against `CachedMultipleNegativesRankingLoss(mini_batch_size)`, at
growing batch sizes. Each run is a fresh process (its peak resident memory is its own): 3 steps of `fit` on
`3 * batch` pairs at 128 tokens; printed per run: peak resident memory (MiB), seconds per step after the first,
and the last step's loss. The machine header (CPU, flags, matmul rates) comes first.

Run: `.venv/bin/python benchmarks/grad_cache_memory.py [--batches 32 128] [--mini-batch 16] [--backend tensorflow]`
"""

import argparse
import sys
import time

from _timing import markdown_table, peak_memory_mib, run_worker
from matmul_ceiling import measure, report
from run_all import header

STEPS, LENGTH = 3, 128


def worker(batch, mini_batch):
    """One run (in its own process): the JSON of its memory, speed and loss."""
    from _timing import emit

    import keras
    import pandas as pd

    import kerasbert as kb
    from kerasbert.data import load_squad
    from recipe_tools import SHARED_DATA

    questions = load_squad(str(SHARED_DATA / "squad" / "dev-v1.1.json")).drop_duplicates("context")
    pairs = pd.DataFrame({"anchor": questions["question"], "positive": questions["context"]}).head(STEPS * batch)
    keras.utils.set_random_seed(0)
    encoder = kb.BertTextEncoder.from_preset("all_minilm_l6_v2_en", sequence_length=LENGTH)
    loss = kb.training.CachedMultipleNegativesRankingLoss(mini_batch_size=mini_batch) if mini_batch else None
    times = []

    class StepTimes(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            times.append(time.perf_counter())

    history = encoder.fit(pairs, loss=loss, epochs=1, batch_size=batch, verbose=0, callbacks=[StepTimes()])
    times.append(time.perf_counter())
    emit({"peak_mib": peak_memory_mib(), "step_s": (times[-1] - times[1]) / (len(times) - 2),
          "loss": history.history["loss"][-1]})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--mini-batch", type=int, default=16)
    parser.add_argument("--backend", default="tensorflow")
    args = parser.parse_args()
    print(header("benchmarks/grad_cache_memory.py " + " ".join(sys.argv[1:])))
    print(report(measure((1024,), 3)))
    rows = []
    for batch in args.batches:
        for mini_batch in (None, args.mini_batch):
            result = run_worker("grad_cache_memory.py", "--worker", batch, mini_batch or 0,
                                keras_backend=args.backend, timeout=3600)
            rows.append([batch, "plain" if mini_batch is None else f"cached, {mini_batch} texts at a time",
                         round(result["peak_mib"]), round(result["step_s"], 1), round(result["loss"], 4)])
            print(rows[-1], flush=True)
    print(markdown_table(["pairs per batch", "loss", "peak memory (MiB)", "s/step", "last loss"], rows))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "applications"))
        worker(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
