"""ONNX export of a task model: `model.onnx` with the tokenizer and the task's config beside it, optionally int8.

The folder `task.export(path, format="onnx")` writes:

    model.onnx       inputs token_ids, segment_ids, padding_mask (int32, any batch and length; the backbone's
                     inputs), outputs the task's (a classifier's `logits`), float32 or int8 weights
    kerasbert.json   the task's Keras config (no weights), the input and output names, the quantisation
    tokenizer/       the tokenizer's files (the vocabulary a `.keras` file keeps as an asset)

Tokenisation runs outside ONNX, in kerasbert (`load_onnx_task` reads the folder back; `kerasbert serve` serves it).
The graph is traced by PyTorch's ONNX exporter from the model under the torch backend: one MatMul per Dense, one
LayerNormalization per LayerNorm, a graph ONNX Runtime fuses (tf2onnx's trace of the TensorFlow graph ran 1.4x
slower); each BERT-style self-attention with a padding mask becomes ONNX Runtime's contrib `Attention`
(`fuse_self_attention`); where only the first token of the last layer is read (a classifier's pooler), that layer's
output projection and feed-forward run on it alone (`first_token_only`). Under TensorFlow or JAX the trace runs in a
`KERAS_BACKEND=torch` process on a `.keras` copy, whose outputs are the same under every backend. `quantize="int8"`
stores embedding tables as int8 with a scale per row (`int8_embedding_rows`) and runs ONNX Runtime's dynamic
quantisation on the MatMuls and fused attentions (`QAttention`): int8 weights (a scale per output column),
activations quantised per batch at run time.

Examples:
    >>> classifier.export("sentiment_onnx", format="onnx")                  # Task.export calls export_onnx
    >>> classifier.export("sentiment_onnx_int8", format="onnx", quantize="int8")
"""

import json
import logging
import os
import tempfile
from pathlib import Path

import keras

from kerasbert.atomic_files import atomic_path
from kerasbert.deployment.export import run_under_backend
from kerasbert.deployment.onnx_attention_fusion import fuse_self_attention
from kerasbert.deployment.onnx_graph_passes import (
    attention_nodes,
    first_token_only,
    int8_embedding_rows,
    masks_with_query_length,
)

ONNX_FILE, CONFIG_FILE, TOKENIZER_FOLDER = "model.onnx", "kerasbert.json", "tokenizer"
# Opset 23 has the fused `Attention` op (torch's scaled_dot_product_attention lowers to it: 1.2x ONNX Runtime int8
# throughput over opset 18's MatMul + Softmax on MiniLM) and `Gelu`.
ONNX_OPSET = 23
FOLDER_FORMAT = 1  # kerasbert.json's "format": raised when the folder's layout changes
QUANTIZATIONS = (None, "int8")
INSTALL_HINT = "pip install 'kerasbert[onnx]' (onnx, onnxruntime, onnxscript; the trace also needs torch)"

TRACE_SCRIPT = """
import importlib, sys
import keras, kerasbert  # noqa: F401  (registers the kerasbert classes)
for module in sys.argv[3:]:
    importlib.import_module(module)
from kerasbert.deployment.onnx_export import onnx_graph
onnx_graph(keras.saving.load_model(sys.argv[1]), sys.argv[2])
"""


def export_onnx(task, path, quantize=None):
    """Write the ONNX folder of `task` (see the module docstring) at `path`; return `path`.

    A kill mid-export leaves no half-written folder at `path`.
    """
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize={quantize!r}: ONNX export writes float32 weights (None) or int8 ('int8').")
    task.check_outputs_known()
    if task.quantization:
        raise ValueError(f"This {type(task).__name__} is quantised by Keras ({task.quantization}); ONNX export "
                         "starts from the float model. Reload the float model and export it with quantize='int8'.")
    check_installed(quantize)
    with atomic_path(path) as temporary:
        folder = Path(temporary)
        folder.mkdir(parents=True)
        if keras.backend.backend() == "torch":
            onnx_graph(task, folder / ONNX_FILE)
        else:
            run_under_backend(task, "torch", TRACE_SCRIPT, folder / ONNX_FILE)
        if quantize:
            quantize_onnx_file(folder / ONNX_FILE)
        (folder / TOKENIZER_FOLDER).mkdir()
        task.tokenizer.save_assets(str(folder / TOKENIZER_FOLDER))
        (folder / CONFIG_FILE).write_text(json.dumps(folder_config(task, quantize), indent=1))
    return path


def check_installed(quantize):
    """An ImportError naming the packages export needs, before any work."""
    modules = ["onnx", "onnxscript", "torch"] + (["onnxruntime"] if quantize else [])
    missing = [name for name in modules if not module_available(name)]
    if missing:
        raise ImportError(f"ONNX export needs {', '.join(missing)}: {INSTALL_HINT}.")


def module_available(name):
    import importlib.util

    return importlib.util.find_spec(name) is not None


def folder_config(task, quantize):
    """kerasbert.json: what `load_onnx_task` rebuilds the task's preprocessing and decoding from."""
    from kerasbert import __version__

    return {
        "format": FOLDER_FORMAT,
        "task": keras.saving.serialize_keras_object(task),
        "inputs": list(task.input),
        "outputs": output_names(task),
        "quantization": quantize,
        "versions": {"kerasbert": __version__, "keras": keras.__version__},
    }


def output_names(model):
    """The ONNX output names, in `keras.tree.flatten` order: a dict output's keys, else the output layers' names."""
    if isinstance(model.output, dict):
        return sorted(model.output)
    return list(model.output_names)


def onnx_graph(model, path):
    """Trace `model` (a functional Keras model on a dict of integer inputs; torch backend) to an ONNX file at
    `path`, every input's batch and length axes dynamic, its self-attentions fused for ONNX Runtime, its last layer
    computed for the first token alone where nothing else of it is read."""
    import onnx

    graph = traced_graph(model)
    fuse_self_attention(graph)
    masks_with_query_length(graph)
    first_token_only(graph)
    onnx.save_model(graph, str(path))
    return path


def traced_graph(model):
    """The ONNX ModelProto torch's exporter traces from `model` (torch backend), before kerasbert's passes."""
    import torch

    # torch.onnx logs a warning for each torchvision op it cannot register; the model has none.
    logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)
    names = list(model.input)

    class Positional(torch.nn.Module):  # torch.onnx.export passes the inputs as positional tensors
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *tensors):
            return tuple(keras.tree.flatten(model(dict(zip(names, tensors)), training=False)))

    shapes = [model.input[name].shape for name in names]
    samples = tuple(torch.ones(sample_shape(shape), dtype=torch.int32) for shape in shapes)
    dynamic = tuple({axis: torch.export.Dim.DYNAMIC for axis, size in enumerate(shape) if size is None}
                    for shape in shapes)
    with torch.no_grad():
        program = torch.onnx.export(Positional().eval(), samples, input_names=names, output_names=output_names(model),
                                    dynamic_shapes=(dynamic,), dynamo=True, opset_version=ONNX_OPSET, verbose=False)
    return program.model_proto  # a new proto at each access


def sample_shape(shape):
    """The trace's input shape: batch 2, length 5, any other free axis 3 (torch.export fixes sizes 0 and 1, and
    axes of equal sample size may be taken for one)."""
    last = len(shape) - 1
    return [size if size is not None else 2 if axis == 0 else 5 if axis == last else 3
            for axis, size in enumerate(shape)]


def quantize_onnx_file(path):
    """Replace the float32 ONNX file at `path` by its int8 form: embedding tables int8 with a scale per row
    (`int8_embedding_rows`), then ONNX Runtime's dynamic quantisation of every MatMul (int8 weights with a scale
    per output, activations quantised per batch as they come)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as scratch:
        rows, target = os.path.join(scratch, "rows.onnx"), os.path.join(scratch, "int8.onnx")
        graph = onnx.load(str(path))
        int8_embedding_rows(graph)
        onnx.save_model(graph, rows)
        # Contrib `Attention` (fused) becomes `QAttention`. ONNX's own `Attention` (an attention left unfused) the
        # quantiser would take for the contrib op: in a graph that has one, attentions stay float.
        operators = ["MatMul"] + ([] if attention_nodes(graph.graph) else ["Attention"])
        quantize_dynamic(rows, target, weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=operators)
        os.replace(target, path)
