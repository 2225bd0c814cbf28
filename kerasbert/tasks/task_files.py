"""Load a saved task model (`.keras`), with errors that name a missing, truncated or foreign file.

Examples:
    >>> classifier = load_task("sentiment.keras")
"""

import zipfile

import keras

from kerasbert.saved_files import saved_task
from kerasbert.tasks.task import Task


def load_task(path):
    """The kerasbert task model saved at `path` (`keras.saving.load_model`, safe mode), or a
    FileNotFoundError/ValueError saying what is wrong with the file and what to do."""
    saved_task(path)  # a missing, foreign or truncated file named before Keras reads it
    try:
        model = keras.saving.load_model(path)
    except (zipfile.BadZipFile, OSError, KeyError, EOFError) as error:
        raise ValueError(f"{path} cannot be read ({type(error).__name__}: {error}); the file is truncated or "
                         f"corrupt. Save the model again.") from None
    if not isinstance(model, Task):
        raise ValueError(f"{path} holds a {type(model).__name__}, not a kerasbert task model (BertClassifier, "
                         f"BertTokenClassifier, ...).")
    return model
