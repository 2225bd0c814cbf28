"""MT-DNN on GLUE with all_minilm_l6_v2_en: MRPC + STS-B + RTE trained together in one BertMultiTask, against
each task fine-tuned alone, under the same budget.

Protocol: batch 32, at most 128 WordPiece tokens, AdamW 5e-5 (weight decay 0.01, 10% warmup, linear decay),
seed 0, 3 epochs. Multi-task: 3 epochs of the three training sets mixed in proportion (each epoch holds every
task's batches once, shuffled together, as MT-DNN), 1,119 steps. Single-task: each task for 3 epochs on its
own (STS-B's own recipe in `glue.py` runs 2), 1,119 steps together: the same number of optimizer steps and
examples seen. Evaluated on each dev set: MRPC accuracy / F1, STS-B Pearson / Spearman, RTE accuracy.
The GLUE files are read from `../shared/data/glue` (or `$KERASBERT_SHARED_DATA/glue`).

Run: `.venv/bin/python applications/multitask_glue.py` (about 15 minutes on 2 CPU cores); the multi-task model
is saved to `runs/multitask_glue.keras`.
"""

import json

from recipe_tools import SHARED_DATA, Phases, save_run  # first: it quiets TensorFlow's log

import keras

import kerasbert as kb

TASKS = {"mrpc": "MRPC", "stsb": "STS-B", "rte": "RTE"}
METRICS = {"mrpc": ("accuracy", "f1"), "stsb": ("pearson", "spearman"), "rte": ("accuracy",)}
EPOCHS = 3


def glue(task, split):
    return kb.data.load_glue_tsv(SHARED_DATA / "glue" / task / f"{split}.tsv", task)[["text", "text_pair", "label"]]


def shown(results):
    return {name: {metric: round(float(results[name][metric]), 4) for metric in METRICS[name]} for name in results}


def main():
    train = {name: glue(task, "train") for name, task in TASKS.items()}
    dev = {name: glue(task, "dev") for name, task in TASKS.items()}
    phases = Phases()

    single = {}
    for name in TASKS:
        keras.utils.set_random_seed(0)
        model = kb.BertClassifier.from_preset("all_minilm_l6_v2_en", sequence_length=128)
        model.fit(train[name], epochs=EPOCHS, batch_size=32, seed=0, verbose=0)
        single[name] = model.evaluate(dev[name], verbose=0)
        phases.mark(f"single {name}")

    keras.utils.set_random_seed(0)
    multitask = kb.BertMultiTask.from_preset("all_minilm_l6_v2_en", sequence_length=128, tasks=train)
    multitask.fit(train, epochs=EPOCHS, batch_size=32, seed=0, verbose=2)
    together = multitask.evaluate(dev, verbose=0)
    phases.mark("multi-task")

    print(f"\nGLUE dev, all_minilm_l6_v2_en, {EPOCHS} epochs (train {', '.join(f'{n} {len(train[n])}' for n in train)})")
    print("single-task:", json.dumps(shown(single)))
    print("multi-task: ", json.dumps(shown(together)))
    print(phases)
    save_run(multitask, "multitask_glue.keras")


if __name__ == "__main__":
    main()
