"""SavedModel export from any Keras backend.

The exported `serve` signature tokenises raw strings with TensorFlow Text ops, so the graph it
runs in must be a TensorFlow one. Under JAX or torch, `export_under_tensorflow` saves the model as
a `.keras` file and exports it from a fresh `KERAS_BACKEND=tensorflow` process: `.keras` files
load with identical outputs under every backend, so the SavedModel is the same one a TensorFlow
session would write.

Example:
>>> export_under_tensorflow(classifier, "sentiment_savedmodel")  # from a JAX or torch session
"""

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

EXPORT_SCRIPT = textwrap.dedent("""
    import sys
    import keras, kerasbert  # noqa: F401  (registers the kerasbert classes)
    keras.saving.load_model(sys.argv[1]).export(sys.argv[2])
""")


def export_under_tensorflow(model, path):
    """Save `model` to a temporary `.keras` file and export it from a TensorFlow-backend process."""
    with tempfile.TemporaryDirectory() as folder:
        saved = Path(folder) / "model.keras"
        model.save(saved)
        done = subprocess.run([sys.executable, "-c", EXPORT_SCRIPT, str(saved), str(path)],
                              env={**os.environ, "KERAS_BACKEND": "tensorflow"},
                              capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"Exporting {model.name} from a TensorFlow-backend process failed:\n"
                           f"{done.stderr[-3000:]}")
    return path
