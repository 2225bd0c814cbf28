"""Text-pair tasks of GLUE with all_minilm_l6_v2_en: MRPC (paraphrase) and STS-B (similarity score).

Protocols (issue 4), batch 32, maximum length 128, the default AdamW 5e-5 (weight decay 0.01,
10% warmup, linear decay), evaluated on dev:
- MRPC: full train (3,668 pairs), 3 epochs, 2 classes. HF reference: accuracy 0.809, F1 0.868.
- STS-B: full train (5,749 pairs), 2 epochs, regression on the 0-5 score (MSE).
  HF reference: Pearson 0.819, Spearman 0.835.
The GLUE files are read from `../shared/data/glue` (or `$KERASBERT_SHARED_DATA/glue`).

Run: `.venv/bin/python applications/glue.py MRPC` or `... applications/glue.py STS-B`
"""

import argparse

from recipe_tools import SHARED_DATA, Phases, save_run  # first: it quiets TensorFlow's log

import kerasbert as kb

PROTOCOLS = {
    "MRPC": {"epochs": 3, "task_args": {"num_classes": 2},
             "reference": "HF reference: accuracy 0.809, F1 0.868; must reach accuracy 0.80"},
    "STS-B": {"epochs": 2, "task_args": {"problem_type": "regression"},
              "reference": "HF reference: Pearson 0.819, Spearman 0.835; must reach Pearson 0.81"},
}


def main(task):
    protocol = PROTOCOLS[task]
    phases = Phases()
    columns = ["text", "text_pair", "label"]
    train = kb.data.load_glue_tsv(SHARED_DATA / "glue" / task / "train.tsv", task)[columns]
    dev = kb.data.load_glue_tsv(SHARED_DATA / "glue" / task / "dev.tsv", task)[columns]
    model = kb.BertClassifier.from_preset("all_minilm_l6_v2_en", sequence_length=128, **protocol["task_args"])
    model.fit(train, epochs=protocol["epochs"], batch_size=32, seed=0)
    results = model.evaluate(dev)
    shown = "  ".join(f"{name} {value:.3f}" for name, value in results.items())
    print(f"\n{task} (train {len(train)}, dev {len(dev)}), {protocol['epochs']} epochs: {shown}")
    print(f"  ({protocol['reference']})\n  {phases}")
    save_run(model, f"glue_{task.lower().replace('-', '')}.keras")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=sorted(PROTOCOLS))
    main(parser.parse_args().task)
