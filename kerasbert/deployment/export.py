"""SavedModel export of a task model, from any Keras backend.

The exported `serve` signature tokenises raw strings with TensorFlow Text ops, so the graph it
runs in must be a TensorFlow one. Under JAX or torch, `run_under_backend` saves the model as
a `.keras` file and exports it from a fresh `KERAS_BACKEND=tensorflow` process: `.keras` files
load with identical outputs under every backend, so the SavedModel is the same one a TensorFlow
session would write (the ONNX export traces in a torch process the same way).

Examples:
    >>> export_saved_model(classifier, "sentiment_savedmodel")   # Task.export calls it
"""

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import keras

from kerasbert.atomic_files import atomic_path

EXPORT_SCRIPT = textwrap.dedent("""
    import importlib, sys
    import keras, kerasbert  # noqa: F401  (registers the kerasbert classes)
    for module in sys.argv[3:]:  # the user's layer classes (a custom block or head) register on import
        importlib.import_module(module)
    keras.saving.load_model(sys.argv[1]).export(sys.argv[2])
""")


def custom_class_modules(model, backend):
    """The modules defining `model`'s layer classes outside keras and kerasbert (the subprocess
    imports them); a class of `__main__` cannot be imported there, so it is a ValueError."""
    modules = {type(layer).__module__: type(layer).__name__ for layer in model._flatten_layers()}
    custom = sorted(m for m in modules if m.split(".")[0] not in ("keras", "kerasbert"))
    if "__main__" in custom:
        raise ValueError(
            f"{modules['__main__']} is defined in __main__ (your script or notebook), which the "
            f"{backend}-backend process that writes the export cannot import. Move the class into a "
            f"module, or export from a KERAS_BACKEND={backend} session."
        )
    return custom


def run_under_backend(model, backend, script, path):
    """Save `model` to a temporary `.keras` file and run `script` in a `KERAS_BACKEND=backend` process, with
    the arguments: that file, `path`, and the modules of the model's own layer classes."""
    modules = custom_class_modules(model, backend)
    with tempfile.TemporaryDirectory() as folder:
        saved = Path(folder) / "model.keras"
        model.save(saved)
        done = subprocess.run([sys.executable, "-c", script, str(saved), str(path), *modules],
                              env={**os.environ, "KERAS_BACKEND": backend,
                                   "PYTHONPATH": os.pathsep.join(filter(None, sys.path))},
                              capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"Exporting {model.name} from a {backend}-backend process failed:\n"
                           f"{done.stderr[-3000:]}")
    return path


def export_saved_model(model, path):
    """Write a TF SavedModel of `model` (a Task) whose `serve` signature takes raw strings; return `path`.

    A kill mid-export leaves no half-written SavedModel at `path`.
    """
    model.check_outputs_known()
    with atomic_path(path) as temporary:
        if keras.backend.backend() != "tensorflow":
            run_under_backend(model, "tensorflow", EXPORT_SCRIPT, temporary)
        else:
            archive = keras.export.ExportArchive()
            archive.track(model)
            archive.add_endpoint("serve", model.serve, input_signature=model.serving_signature())
            archive.write_out(str(temporary), verbose=False)
    return path
