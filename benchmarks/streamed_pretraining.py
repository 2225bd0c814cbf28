"""Pre-training from a streamed corpus: memory that does not grow with the corpus, and a pipeline the step does not
wait on.

1. Jane Austen's novels (shipped) repeated into a ~100 MB JSON Lines corpus, prepared into shards by
   `prepare_pretraining` with 2 workers: time, MB/s, peak resident memory of a worker.
2. A ~2 GB corpus: the same shards twenty times over (hard links, one manifest): the same text repeated, which is
   all this measure needs.
3. bert_mini from scratch (4 layers, hidden 256), batch 32 x 128, pre-trained for `--steps` steps on each corpus,
   each run a fresh process: its peak resident memory (the two must differ by less than 200 MB).
4. The stream alone (one process, no model): examples/s; and the step's idle fraction: 1 - (s/step on the same
   batches held in memory) / (s/step streamed).

Run: `.venv/bin/python benchmarks/streamed_pretraining.py [--steps 60] [--work /tmp/streamed]`
"""

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from _timing import markdown_table, peak_memory_mib, run_worker
from matmul_ceiling import measure, report
from run_all import header

PRESET, LENGTH, BATCH = "bert_mini_en_uncased", 128, 32


def build_corpus(work, megabytes):
    """Austen's chapters as JSON Lines, repeated to about `megabytes`."""
    import pandas as pd

    from kerasbert.data.shipped import load_dataset

    paragraphs = pd.concat([load_dataset("jane_austen", split) for split in ("train", "test")], ignore_index=True)
    chapters = paragraphs.groupby(["book", "chapter"], sort=False)["text"].agg("\n".join).tolist()
    lines = "".join(json.dumps({"text": chapter}) + "\n" for chapter in chapters)
    path = work / "corpus.jsonl"
    copies = max(1, round(megabytes * 1e6 / len(lines.encode())))
    with open(path, "w", encoding="utf-8") as file:
        for _ in range(copies):
            file.write(lines)
    return path


def repeated_shards(shards, folder, times):
    """`shards` `times` over, hard-linked, with one manifest listing every copy."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((shards / "manifest.json").read_text())
    copies = []
    for copy in range(times):
        for shard in manifest["shards"]:
            name = f"copy{copy:02d}-{shard['name']}"
            if not (folder / name).exists():
                os.link(shards / shard["name"], folder / name)
            copies.append({**shard, "name": name})
    manifest.update(shards=copies, documents=manifest["documents"] * times, tokens=manifest["tokens"] * times)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return manifest


def prepare_worker(corpus, output):
    """Prepare the shards (in its own process: the peak memory of the workers is the children's)."""
    import resource

    from _timing import emit

    from kerasbert.data.pretraining_shards import prepare_pretraining
    from kerasbert.families.family import tokenizer_from_preset

    started = time.perf_counter()
    manifest = prepare_pretraining(corpus, output, tokenizer_from_preset(PRESET), num_workers=2)
    emit({"seconds": time.perf_counter() - started, "documents": manifest["documents"], "tokens": manifest["tokens"],
          "shards": len(manifest["shards"]), "worker_peak_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
          "parent_peak_mib": peak_memory_mib()})


def pretrain_worker(shards, steps, cached):
    """`steps` steps on the stream (or, `cached`, on its first batches held in memory); peak memory, s/step."""
    import keras
    import tensorflow as tf

    from _timing import emit

    import kerasbert as kb

    keras.utils.set_random_seed(0)
    pretrainer = kb.BertPretrainer.from_preset(PRESET, load_weights=False, max_sequence_length=LENGTH)
    data = shards
    if cached:
        data = pretrainer.pretraining_dataset(shards, BATCH).take(steps).cache().repeat()
        for _ in data.take(steps):  # filled before timing
            pass
    times = []

    class StepTimes(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            times.append(time.perf_counter())

    pretrainer.fit(data, batch_size=None if cached else BATCH, epochs=1, steps_per_epoch=steps, verbose=0,
                   callbacks=[StepTimes()], **({} if cached else {"seed": 0}))
    times.append(time.perf_counter())
    skip = 5  # tracing and the buffers' first fill
    emit({"peak_mib": peak_memory_mib(), "step_s": (times[-1] - times[skip]) / (len(times) - 1 - skip),
          "tf_threads": tf.config.threading.get_intra_op_parallelism_threads()})


def stream_worker(shards, batches):
    """The stream alone: examples/s after the buffers' first fill."""
    from _timing import emit

    from kerasbert.data.pretraining_stream import PretrainingStream
    from kerasbert.families.family import tokenizer_from_preset

    stream = PretrainingStream(shards, tokenizer_from_preset(PRESET), max_sequence_length=LENGTH)
    iterator = stream.batches(BATCH)
    next(iterator)
    started = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    emit({"examples_per_s": batches * BATCH / (time.perf_counter() - started), "peak_mib": peak_memory_mib()})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--megabytes", type=float, default=100)
    parser.add_argument("--work", default="/tmp/streamed_pretraining")
    args = parser.parse_args()
    print(header("benchmarks/streamed_pretraining.py " + " ".join(sys.argv[1:])))
    print(report(measure((1024,), 3)))
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    corpus = build_corpus(work, args.megabytes)
    megabytes = corpus.stat().st_size / 1e6
    prepared = run_worker("streamed_pretraining.py", "--prepare", corpus, work / "shards_100mb", timeout=7200)
    print(f"prepare: {megabytes:.0f} MB in {prepared['seconds']:.0f} s ({megabytes / prepared['seconds']:.2f} MB/s, "
          f"2 workers), {prepared['documents']:,} documents, {prepared['tokens']:,} tokens, {prepared['shards']} "
          f"shards; peak memory: a worker {prepared['worker_peak_mib']:.0f} MiB, the parent "
          f"{prepared['parent_peak_mib']:.0f} MiB", flush=True)
    big = repeated_shards(work / "shards_100mb", work / "shards_2gb", 20)
    print(f"2 GB corpus: {megabytes * 20 / 1e3:.1f} GB of text, {big['tokens']:,} tokens, {len(big['shards'])} shards")
    rows = []
    for name in ("shards_100mb", "shards_2gb"):
        result = run_worker("streamed_pretraining.py", "--pretrain", work / name, args.steps, 0, timeout=7200)
        rows.append([name, round(result["peak_mib"]), round(result["step_s"], 3)])
        print(rows[-1], flush=True)
    print(markdown_table(["corpus", "peak memory (MiB)", "s/step"], rows))
    print(f"peak memory difference 2 GB - 100 MB: {rows[1][1] - rows[0][1]} MiB")
    cached = run_worker("streamed_pretraining.py", "--pretrain", work / "shards_2gb", args.steps, 1, timeout=7200)
    alone = run_worker("streamed_pretraining.py", "--stream", work / "shards_2gb", 200, timeout=7200)
    needed = BATCH / rows[1][2]
    print(f"stream alone: {alone['examples_per_s']:.0f} examples/s on one core; the step consumes {needed:.0f} "
          f"examples/s ({alone['examples_per_s'] / needed:.1f}x headroom)")
    print(f"s/step streamed {rows[1][2]:.3f}, on the same batches in memory {cached['step_s']:.3f}: idle fraction "
          f"{max(0.0, 1 - cached['step_s'] / rows[1][2]):.1%}")


if __name__ == "__main__":
    if sys.argv[1:2] in (["--prepare"], ["--pretrain"], ["--stream"]):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        mode, arguments = sys.argv[1], sys.argv[2:]
        if mode == "--prepare":
            prepare_worker(*arguments)
        elif mode == "--pretrain":
            pretrain_worker(arguments[0], int(arguments[1]), bool(int(arguments[2])))
        else:
            stream_worker(arguments[0], int(arguments[1]))
    else:
        main()
