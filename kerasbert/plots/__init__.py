"""Pictures and reports of a training run: PNG plots (matplotlib, Agg) and `write_report` (plots, metrics.json
and a model card). Needs the `plots` extra: `pip install 'kerasbert[plots]'`.

Examples:
    >>> history = classifier.fit(train, validation_data=dev, epochs=3)
    >>> kb.plots.training_curves(history, "curves.png")
    >>> kb.plots.write_report(classifier, "report", history=history, data=dev)
"""

from kerasbert.plots.figures import attention_map, confusion_matrix, entity_scores, training_curves
from kerasbert.plots.report import model_card, write_report

__all__ = ["attention_map", "confusion_matrix", "entity_scores", "model_card", "training_curves", "write_report"]
