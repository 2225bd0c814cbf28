"""`write_report`: what a training run leaves beside its model: curves, confusion matrix or entity scores,
`metrics.json` (exactly `evaluate`'s dict) and a model card (`README.md`).

Example:
>>> write_report(classifier, "sentiment_report", data=test_df, history=history, data_name="UCI test")
"""

import datetime
import json
from pathlib import Path

import numpy as np

from kerasbert.atomic_files import write_text_atomically
from kerasbert.json_records import plain_value
from kerasbert.plots.figures import confusion_matrix, entity_scores, training_curves


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


def versions():
    import keras
    import tensorflow as tf

    from kerasbert import __version__

    return {"kerasbert": __version__, "keras": keras.__version__, "tensorflow": tf.__version__,
            "backend": keras.backend.backend()}


def model_card(model, metrics=None, data_name=None, data_rows=None, training=None, hyperparameters=None,
               model_file=None, pictures=()):
    """The model card as Markdown: task, backbone, labels, data, hyperparameters, metrics, versions, date."""
    config = model.backbone.get_config()
    lines = [f"# {type(model).__name__}", "",
             f"Written by kerasbert on {datetime.date.today().isoformat()}." + (f" Model file: `{model_file}`."
                                                                                   if model_file else ""), "",
             "## Model", "",
             f"- backbone: {config['num_layers']} layers, hidden {config['hidden_dim']}, {config['num_heads']} heads, "
             f"vocabulary {config['vocabulary_size']:,}, {model.count_params():,} parameters",
             f"- longest input: {model.sequence_length} tokens"]
    labels = getattr(model, "labels", None)
    if labels is not None:
        lines.append(f"- labels ({len(labels)}): {', '.join(map(str, labels))}")
    if getattr(model, "problem_type", None):
        lines.append(f"- problem type: {model.problem_type}")
    lines += ["", "## Data", ""]
    if training:
        lines.append(f"- training: {training['data']} ({training['rows']:,} rows)")
    if data_name is not None:
        lines.append(f"- evaluation: {data_name}" + (f" ({data_rows:,} rows)" if data_rows is not None else ""))
    if hyperparameters:
        lines += ["", "## Hyperparameters", "", *[f"- {key}: {value}" for key, value in hyperparameters.items()]]
    if metrics:
        lines += ["", "## Metrics", "", "| metric | value |", "|---|---|"]
        lines += [f"| {name} | {value:.4f} |" for name, value in metrics.items() if isinstance(value, (int, float))]
    if pictures:
        lines += ["", "## Plots", "", *[f"![{name}]({name})" for name in pictures]]
    lines += ["", "## Versions", "", *[f"- {name}: {value}" for name, value in versions().items()], ""]
    return "\n".join(lines)
