"""Fine-tuning less than all of BERT, measured: full / frozen / frozen + layer mix / adapters / LoRA on one data set
with all_minilm_l6_v2_en, each with its score, trainable parameters, bytes stored per task and training time.

Protocols (batch 32, at most 128 WordPiece tokens, AdamW with 10% warmup and linear decay, seed 0): the data
and epochs of the full fine-tuning recipes (`sentiment_uci.py`: 1 epoch; `glue.py`: MRPC 3, STS-B 2;
`ner_conll2003.py`: 5,000 sentences, 3), at the default rate (5e-5 for MiniLM) for full fine-tuning; the
modes that train few weights take larger rates and more epochs, as their papers do (Houlsby et al.: 1e-4 to
3e-3 for up to 20 epochs; Hu et al.: 4e-4 to 5e-4): frozen heads 1e-3 for 10 epochs (the classifier's
features are computed once, `frozen_features`; `--modes frozen-recomputed` runs BERT every epoch instead,
for the cache's speed-up), adapters (size 64) and LoRA (rank 8, alpha 16, query and
value) 1e-3 for twice the full epochs. Bytes per task: the `.keras` file for full fine-tuning (the whole
model is the task), `save_task_weights` for the others (only what trained, plus labels and settings).

Run: `.venv/bin/python applications/fine_tuning_modes.py uci [--modes full lora ...]` (uci, mrpc, stsb, conll);
each result is also appended to `runs/fine_tuning_modes.jsonl`.
"""

import argparse
import tempfile
import time
from pathlib import Path

from recipe_tools import SHARED_DATA, log_result  # first: it quiets TensorFlow's log

import keras
import numpy as np

import kerasbert as kb

MODES = {
    "full": {"options": {}, "learning_rate": None, "epochs": 1},
    "frozen": {"options": {"fine_tuning": "frozen"}, "learning_rate": 1e-3, "epochs": "frozen"},
    "frozen+mix": {"options": {"fine_tuning": kb.FineTuningConfig("frozen", layer_mix=True)}, "learning_rate": 1e-3,
                   "epochs": "frozen"},
    # The same as "frozen" with BERT run again every epoch: the speed-up of the feature cache.
    "frozen-recomputed": {"options": {"fine_tuning": "frozen"}, "learning_rate": 1e-3, "epochs": "frozen",
                          "fit": {"cache_features": False}},
    "adapters": {"options": {"fine_tuning": "adapters", "adapter_size": 64}, "learning_rate": 1e-3, "epochs": 2},
    "lora": {"options": {"fine_tuning": "lora", "lora_rank": 8, "lora_alpha": 16}, "learning_rate": 1e-3,
             "epochs": 2},
}
FROZEN_EPOCHS = 10


def uci():
    labels = {0: "negative", 1: "positive"}
    train, test = (kb.data.load_dataset("uci_sentiment", split)[["text", "label"]] for split in ("train", "test"))
    return (kb.BertClassifier, {"labels": list(labels.values())}, train.assign(label=train["label"].map(labels)),
            test.assign(label=test["label"].map(labels)), 1, "accuracy")


def glue(task, epochs, task_args, metric):
    columns = ["text", "text_pair", "label"]
    train, dev = (kb.data.load_glue_tsv(SHARED_DATA / "glue" / task / f"{split}.tsv", task)[columns]
                  for split in ("train", "dev"))
    return kb.BertClassifier, task_args, train, dev, epochs, metric


def conll():
    folder = SHARED_DATA / "conll2003"
    return (kb.BertTokenClassifier, {"num_tags": 9}, kb.data.load_conll(folder / "train.txt").head(5000),
            kb.data.load_conll(folder / "test.txt"), 3, "f1")


DATASETS = {
    "uci": uci,
    "mrpc": lambda: glue("MRPC", 3, {"num_classes": 2}, "f1"),
    "stsb": lambda: glue("STS-B", 2, {"problem_type": "regression"}, "pearson"),
    "conll": conll,
}


def stored_bytes(model, mode):
    """Bytes a user keeps for this task beside the shared backbone."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("task.keras" if mode == "full" else "task.safetensors")
        model.save(path) if mode == "full" else model.save_task_weights(path)
        return path.stat().st_size


def run(dataset, mode):
    task_class, task_args, train, test, full_epochs, metric = DATASETS[dataset]()
    setting = MODES[mode]
    epochs = FROZEN_EPOCHS if setting["epochs"] == "frozen" else setting["epochs"] * full_epochs
    keras.utils.set_random_seed(0)
    model = task_class.from_preset("all_minilm_l6_v2_en", sequence_length=128, **setting["options"], **task_args)
    trainable = int(sum(np.prod(weight.shape) for weight in model.trainable_weights))
    start = time.perf_counter()
    model.fit(train, epochs=epochs, batch_size=32, learning_rate=setting["learning_rate"], seed=0, verbose=0,
              **setting.get("fit", {}))
    seconds = time.perf_counter() - start
    results = model.evaluate(test, verbose=0)
    row = {"dataset": dataset, "mode": mode, "epochs": epochs, "learning_rate": setting["learning_rate"] or 5e-5,
           "metric": metric, "score": round(float(results[metric]), 4), "trainable": trainable,
           "bytes": stored_bytes(model, mode), "train_seconds": round(seconds, 1),
           "results": {name: round(float(value), 4) for name, value in results.items() if np.isscalar(value)}}
    if model.layer_mix:
        row["layer_weights"] = [round(float(w), 3) for w in model.get_layer("layer_mix").layer_weights()]
    log_result(row, "fine_tuning_modes")
    return row


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", choices=sorted(DATASETS))
    parser.add_argument("--modes", nargs="+", choices=list(MODES),
                        default=[mode for mode in MODES if mode != "frozen-recomputed"])
    arguments = parser.parse_args()
    for mode in arguments.modes:
        run(arguments.dataset, mode)
