"""The model card (`README.md`) written beside a model: by `kerasbert.plots.write_report`, `fit --report`
and every `save_to_preset`. It reads only public attributes of the model it describes (no model class).
"""

import datetime


def versions():
    import keras
    import tensorflow as tf

    from kerasbert import __version__

    return {"kerasbert": __version__, "keras": keras.__version__, "tensorflow": tf.__version__,
            "backend": keras.backend.backend()}


def model_card(model, metrics=None, data_name=None, data_rows=None, training=None, hyperparameters=None,
               model_file=None, pictures=()):
    """The model card as Markdown: task (or backbone), labels, data, hyperparameters, metrics, versions, date.

    Examples:
        >>> print(model_card(classifier, classifier.evaluate(test_df), data_name="UCI test"))
    """
    backbone = getattr(model, "backbone", model)
    config = backbone.get_config()
    lines = [f"# {type(model).__name__}", "",
             f"Written by kerasbert on {datetime.date.today().isoformat()}." + (f" Model file: `{model_file}`."
                                                                                   if model_file else ""), "",
             "## Model", "",
             f"- backbone: {config['num_layers']} layers, hidden {config['hidden_dim']}, {config['num_heads']} heads, "
             f"vocabulary {config['vocabulary_size']:,}, {model.count_params():,} parameters",
             f"- longest input: {getattr(model, 'sequence_length', None) or config['max_sequence_length']} tokens"]
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
