"""`write_report`: what a training run leaves beside its model: curves, confusion matrix or entity scores,
`metrics.json` (exactly `evaluate`'s dict) and a model card (`README.md`).

Examples:
    >>> write_report(classifier, "sentiment_report", data=test_df, history=history, data_name="UCI test")
"""

import json
from pathlib import Path

import numpy as np

from kerasbert.atomic_files import write_text_atomically
from kerasbert.json_records import plain_value
from kerasbert.plots.figures import confusion_matrix, entity_scores, training_curves
from kerasbert.presets.model_card import model_card


def write_report(model, folder, data, history=None, data_name="evaluation data", training=None,
                 hyperparameters=None, model_file=None):
    """Evaluate `model` on `data` and write the report into `folder`; returns `evaluate`'s dict.

    `training`: `{"data": name, "rows": n}` of the training set; `hyperparameters`: a dict for the card.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    metrics = model.evaluate(data, verbose=0)
    write_text_atomically(folder / "metrics.json", json.dumps(plain_value(metrics), indent=2) + "\n")
    pictures = []
    if history is not None and any(getattr(history, "history", history).values()):
        pictures.append(training_curves(history, folder / "training_curves.png").name)
    if getattr(model, "problem_type", None) in ("binary", "multiclass"):
        outputs, prepared = model.predict_outputs(data, with_labels=True, verbose=0)
        confusion_matrix(model.labels, prepared.labels, np.argmax(outputs, -1), folder / "confusion_matrix.png",
                         title=f"Confusion matrix: {data_name}")
        pictures.append("confusion_matrix.png")
    if metrics.get("per_type"):
        pictures.append(entity_scores(metrics["per_type"], folder / "entity_scores.png").name)
    card = model_card(model, metrics, data_name=data_name, data_rows=len(data), training=training,
                      hyperparameters=hyperparameters, model_file=model_file, pictures=pictures)
    write_text_atomically(folder / "README.md", card)
    return metrics
