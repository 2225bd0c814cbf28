"""A fit that ended where guessing the most frequent class would: say so, and what to change.

Examples:
    >>> history = classifier.fit(train_df, validation_data=dev_df)   # warns when it learned nothing
"""

import pandas as pd

from kerasbert.doors import option_hint, warn_the_caller

MARGIN = 0.01  # validation accuracy at most this far above the majority share counts as chance level


def warn_if_chance_level(history, validation_labels, fine_tuning):
    """Warn when the last epoch's validation accuracy is no better than the majority class share of
    `validation_labels` (a single-label classifier's validation column), naming the learning rate and epochs."""
    accuracies = getattr(history, "history", {}).get("val_accuracy")
    labels = pd.Series(validation_labels).dropna()
    if not accuracies or labels.empty or labels.map(type).eq(list).any():
        return
    majority = float(labels.value_counts(normalize=True).max())
    if accuracies[-1] <= majority + MARGIN:
        warn_the_caller(
            f"Validation accuracy {accuracies[-1]:.3f} after {len(accuracies)} epoch(s) is chance level (the most "
            f"frequent label is {majority:.1%} of the validation data): the model has not learned the task. Train "
            f"longer ({option_hint('epochs', 2 * len(accuracies))}) or at another rate (fine_tuning={fine_tuning!r} "
            f"starts from {'1e-3' if fine_tuning != 'full' else '5e-5 .. 2e-5 by size'}; e.g. "
            f"{option_hint('learning_rate', '1e-4' if fine_tuning == 'full' else '3e-3')}).")
