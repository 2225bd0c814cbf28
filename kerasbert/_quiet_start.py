"""Silence TensorFlow's C++ start-up lines (absl "WARNING: All log messages before absl::InitializeLog()",
"Could not find cuda drivers", CPU feature notes) unless the user chose a log level.

They are written to the process's stderr before absl's logging is set up, so `TF_CPP_MIN_LOG_LEVEL` does
not reach them: the import runs with file descriptor 2 pointed at /dev/null, and Python errors still
propagate. Setting `TF_CPP_MIN_LOG_LEVEL` yourself (any value) keeps TensorFlow's own behaviour.
"""

import contextlib
import importlib.util
import os
import sys


@contextlib.contextmanager
def stderr_to_devnull():
    """Point file descriptor 2 at /dev/null for the duration (C++ writes there, not to `sys.stderr`)."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def import_tensorflow_quietly():
    """Import TensorFlow (and tensorflow-text) without the start-up lines, once, if the user set no level and
    TensorFlow is installed (the layers run on JAX or torch without it)."""
    if "tensorflow" in sys.modules or "TF_CPP_MIN_LOG_LEVEL" in os.environ:
        return
    if importlib.util.find_spec("tensorflow") is None:
        return
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # later C++ lines too (e.g. "failed call to cuInit" without a GPU)
    with stderr_to_devnull():
        import tensorflow  # noqa: F401
        import tensorflow_text  # noqa: F401
