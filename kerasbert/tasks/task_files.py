"""Load a saved task model (`.keras`), with errors that name a missing, truncated or foreign file.

Examples:
    >>> classifier = load_task("sentiment.keras")
    >>> onnx_classifier = load_task("sentiment_onnx")
"""

import zipfile

import keras

from kerasbert.deployment.onnx_runtime import is_onnx_folder, load_onnx_task
from kerasbert.saved_files import saved_task
from kerasbert.tasks.task import Task


def load_task(path):
    """The kerasbert task model saved at `path` (`keras.saving.load_model`, safe mode), or a
    FileNotFoundError/ValueError saying what is wrong with the file and what to do. An ONNX folder
    (`export(path, format="onnx")`) loads as an `OnnxTask`, which predicts and evaluates."""
    if is_onnx_folder(path):
        return load_onnx_task(path)
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
