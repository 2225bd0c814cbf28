"""Load a saved task model (`.keras`), with errors that name a missing, truncated or foreign file.

Examples:
    >>> classifier = load_task("sentiment.keras")
"""

import zipfile
from pathlib import Path

import keras

from kerasbert.tasks.task import Task


def load_task(path):
    """The kerasbert task model saved at `path` (`keras.saving.load_model`, safe mode), or a
    FileNotFoundError/ValueError saying what is wrong with the file and what to do."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (resolved from {Path.cwd()}). Give the .keras file that "
                                f"`save` or `kerasbert fit --output` wrote.")
    if path.suffix != ".keras":
        raise ValueError(f"{path} is not a .keras file. Give a model saved with `save('name.keras')`.")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is not a complete .keras file (a .keras file is a zip archive; this one is "
                         f"truncated or corrupt). Save the model again.")
    try:
        model = keras.saving.load_model(path)
    except (zipfile.BadZipFile, OSError, KeyError, EOFError) as error:
        raise ValueError(f"{path} cannot be read ({type(error).__name__}: {error}); the file is truncated or "
                         f"corrupt. Save the model again.") from None
    if not isinstance(model, Task):
        raise ValueError(f"{path} holds a {type(model).__name__}, not a kerasbert task model (BertClassifier, "
                         f"BertTokenClassifier, ...).")
    return model
