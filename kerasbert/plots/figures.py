"""The plots: training curves, confusion matrix, per-entity scores, one attention map. Each writes a PNG
and returns its path. matplotlib runs on its Agg backend (no display needed).

Examples:
    >>> confusion_matrix(["neg", "pos"], gold=[0, 1, 1], predicted=[0, 1, 0], path="confusion.png")
"""

from pathlib import Path

import numpy as np

from kerasbert.atomic_files import atomic_path
from kerasbert.families.bert.bert_backbone import BertBackbone


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(figure, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=110, bbox_inches="tight", format="png")
    pyplot().close(figure)
    return path


def training_curves(history, path):
    """Loss and each metric per epoch, training and validation (`val_...`) on one panel per quantity.
    `history`: what `fit` returns (or its `.history` dict)."""
    logs = getattr(history, "history", history)
    if not logs or not any(logs.values()):
        raise ValueError("The history is empty: fit for at least one epoch first.")
    names = [name for name in logs if not name.startswith("val_") and name != "learning_rate"]
    plt = pyplot()
    figure, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.4), squeeze=False)
    for axis, name in zip(axes[0], names):
        epochs = np.arange(1, len(logs[name]) + 1)
        axis.plot(epochs, logs[name], marker="o", label="training")
        if f"val_{name}" in logs:
            axis.plot(epochs, logs[f"val_{name}"], marker="s", label="validation")
        axis.set(title=name, xlabel="epoch")
        if len(epochs) == 1:  # one epoch: a labelled point per series, not lone dots on a 0.96-1.04 axis
            axis.set(xlim=(0.5, 1.5), xticks=[1])
            for line in axis.get_lines():
                axis.annotate(f"{line.get_ydata()[0]:.3f}", (1, line.get_ydata()[0]), textcoords="offset points",
                              xytext=(8, 0), va="center")
        else:
            axis.xaxis.get_major_locator().set_params(integer=True)
        axis.legend()
    return save(figure, path)


def confusion_matrix(labels, gold, predicted, path, title="Confusion matrix"):
    """Counts of gold class (rows) against predicted class (columns); `gold`/`predicted` are class ids."""
    size = len(labels)
    counts = np.zeros((size, size), np.int64)
    np.add.at(counts, (np.asarray(gold, np.int64), np.asarray(predicted, np.int64)), 1)
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(1.2 + 0.7 * size, 1.0 + 0.7 * size))
    axis.imshow(counts, cmap="Blues")
    for row in range(size):
        for column in range(size):
            axis.text(column, row, str(counts[row, column]), ha="center", va="center",
                      color="white" if counts[row, column] > counts.max() / 2 else "black")
    names = [str(label) for label in labels]
    axis.set(xticks=range(size), yticks=range(size), xticklabels=names, yticklabels=names,
             xlabel="predicted", ylabel="gold", title=title)
    plt.setp(axis.get_xticklabels(), rotation=45, ha="right")
    save(figure, path)
    return counts


def entity_scores(per_type, path):
    """Bars of precision, recall and F1 per entity type (`evaluate(...)["per_type"]` of a token classifier)."""
    if not per_type:
        raise ValueError("No entity types to plot: the data has no entities (per_type is empty).")
    kinds = list(per_type)
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(1.5 + 1.2 * len(kinds), 3.4))
    for offset, measure in zip((-0.27, 0.0, 0.27), ("precision", "recall", "f1")):
        axis.bar(np.arange(len(kinds)) + offset, [per_type[kind][measure] for kind in kinds], width=0.27,
                 label=measure)
    axis.set(xticks=range(len(kinds)), xticklabels=kinds, ylim=(0, 1.05), title="Entities per type")
    axis.legend(loc="lower right")
    return save(figure, path)


def attention_map(model, text, path, layer=-1, head=0):
    """The attention weights of `layer`/`head` over the WordPiece tokens of `text` (a task model or backbone
    with its tokenizer: `model.backbone`, `model.preprocessor`)."""
    backbone = BertBackbone(**{**model.backbone.get_config(), "output_attentions": True})
    backbone.set_weights(model.backbone.get_weights())
    inputs = model.preprocessor([text])
    attentions = backbone(inputs)["attentions"]
    if not -len(attentions) <= layer < len(attentions):
        raise ValueError(f"layer={layer}: the model has {len(attentions)} layers (0..{len(attentions) - 1}).")
    weights = np.asarray(attentions[layer])[0]
    if not 0 <= head < weights.shape[0]:
        raise ValueError(f"head={head}: each layer has {weights.shape[0]} heads (0..{weights.shape[0] - 1}).")
    length = int(np.asarray(inputs["padding_mask"])[0].sum())
    tokens = [model.tokenizer.id_to_token(int(i)) for i in np.asarray(inputs["token_ids"])[0, :length]]
    plt = pyplot()
    size = 1.5 + 0.32 * length
    figure, axis = plt.subplots(figsize=(size, size))
    image = axis.imshow(weights[head, :length, :length], cmap="viridis", vmin=0)
    figure.colorbar(image, ax=axis, fraction=0.046, pad=0.04, label="attention weight")
    axis.set(xticks=range(length), yticks=range(length), xticklabels=tokens, yticklabels=tokens,
             xlabel="key (attended to)", ylabel="query (attending)", title=f"layer {layer % len(attentions)}, head {head}")
    plt.setp(axis.get_xticklabels(), rotation=90)
    return save(figure, path)
