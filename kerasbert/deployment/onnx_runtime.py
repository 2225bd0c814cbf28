"""An exported ONNX folder run by ONNX Runtime: predict and evaluate raw data as the Keras task does.

`load_onnx_task(folder)` rebuilds the task's preprocessing and decoding from `kerasbert.json` and the tokenizer
files (kerasbert tokenises: in Rust through HF `tokenizers` where its WordPiece ids are the same, else in
TensorFlow; ONNX Runtime computes) and returns an `OnnxTask`: the same `predict` / `evaluate` on a
DataFrame, a list or a text, the same output columns. `kerasbert serve FOLDER` and `kerasbert predict FOLDER` load
it through `load_task`.

Examples:
    >>> classifier = load_onnx_task("sentiment_onnx_int8")
    >>> classifier.predict(["a lovely film", "dull"])
"""

import json
import os

import keras
import numpy as np

from kerasbert.data.native_reading import NativeReader
from kerasbert.deployment.onnx_export import CONFIG_FILE, FOLDER_FORMAT, INSTALL_HINT, ONNX_FILE, TOKENIZER_FOLDER


def is_onnx_folder(path):
    """Whether `path` is a folder `export(format="onnx")` wrote."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, CONFIG_FILE))


def load_onnx_task(folder, threads=None):
    """The `OnnxTask` of an exported ONNX folder; `threads`: ONNX Runtime's intra-op threads (default: its own,
    one per physical core)."""
    config = read_folder_config(folder)
    session = onnx_session(os.path.join(folder, ONNX_FILE), threads)
    task = keras.saving.deserialize_keras_object(config["task"])  # its weights are never used
    task.tokenizer.load_assets(os.path.join(folder, TOKENIZER_FOLDER))
    task.native_reader = NativeReader.of(task.preprocessor)  # WordPiece texts read in Rust: no TensorFlow op a call
    task.inference_function = OnnxFunction(session, task.output)
    return OnnxTask(task, config.get("quantization"), folder)


def onnx_session(path, threads=None):
    """The ONNX Runtime CPU session kerasbert runs `path` in. ONNX Runtime's `SkipLayerNormFusion` is off: its
    fused residual + LayerNorm kernel ran 310 us where the `Add` and `LayerNormalization` it replaces ran 43 (one
    thread, [1, 128, 384]; ONNX Runtime 1.32), 16% of all-MiniLM-L6-v2's int8 batch-1 time."""
    try:
        import onnxruntime
    except ImportError:
        raise ImportError(f"Running an ONNX folder needs onnxruntime: {INSTALL_HINT}.") from None
    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"],
                                        disabled_optimizers=["SkipLayerNormFusion"])


def read_folder_config(folder):
    """kerasbert.json, or an error naming what is missing or wrong in the folder."""
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"No ONNX folder at {folder!r}: write one with model.export(path, format='onnx').")
    for name in (CONFIG_FILE, ONNX_FILE, TOKENIZER_FOLDER):
        if not os.path.exists(os.path.join(folder, name)):
            raise ValueError(f"{folder} has no {name}: it is not a complete kerasbert ONNX folder. Export it again "
                             "with model.export(path, format='onnx').")
    try:
        with open(os.path.join(folder, CONFIG_FILE), encoding="utf-8") as file:
            config = json.load(file)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{folder}/{CONFIG_FILE} is not valid JSON ({error}); export the model again.") from None
    if not isinstance(config, dict) or config.get("format") != FOLDER_FORMAT or "task" not in config:
        raise ValueError(f"{folder}/{CONFIG_FILE} is not a kerasbert ONNX config of format {FOLDER_FORMAT}; "
                         "export the model again with this kerasbert.")
    return config


class OnnxFunction:
    """`ModelFunction`'s interface over an ONNX Runtime session: a batch of the model's inputs (TensorFlow or
    numpy) -> its outputs as numpy, in the Keras model's output structure."""

    def __init__(self, session, output_structure):
        self.session, self.output_structure = session, output_structure
        self.input_names = [model_input.name for model_input in session.get_inputs()]

    def trace(self, element_spec):
        """Nothing to trace: the graph is fixed."""

    def __call__(self, inputs):
        feeds = {name: np.asarray(inputs[name], dtype=np.int32) for name in self.input_names}
        outputs = self.session.run(None, feeds)
        return keras.tree.pack_sequence_as(self.output_structure, outputs)


class OnnxTask:
    """A task model exported to ONNX: `predict` and `evaluate` raw data as the Keras task (`keras_task`) does,
    computed by ONNX Runtime. It neither trains nor saves: those need the `.keras` file.

    Examples:
        >>> OnnxTask.load("sentiment_onnx").predict("a lovely film")
    """

    runtime = "onnx"
    # What the Keras task answers for it: preprocessing, decoding and descriptions, none of its weights.
    SHARED = ("predict", "predict_outputs", "evaluate", "columns", "labels", "problem_type", "uses_pairs",
              "long_inputs", "sequence_length", "tokenizer", "preprocessor", "check_outputs_known")

    def __init__(self, keras_task, quantization, folder):
        self.keras_task, self.quantization, self.folder = keras_task, quantization, folder

    load = staticmethod(load_onnx_task)

    def __getattr__(self, name):
        if name in OnnxTask.SHARED:
            return getattr(self.keras_task, name)
        raise AttributeError(f"An OnnxTask ({self.folder}) runs model.onnx in ONNX Runtime: it predicts and "
                             f"evaluates, and has no {name!r}. Load the model's .keras file for that.")

    def __repr__(self):
        return f"<OnnxTask {type(self.keras_task).__name__} ({self.quantization or 'float32'}) from {self.folder}>"
