"""Where ONNX int8 loses accuracy: one float ONNX folder of a CoNLL-2003 tagger (or UCI classifier), quantised
several ways, each scored on the test set.

Protocol: the fine-tuning of `int8_quantization.py` (all_minilm_l6_v2_en, seed 0), exported once as float32
ONNX; then ONNX Runtime `quantize_dynamic` (int8 weights, a scale per output) over every MatMul and embedding
table (`all`), with the logits layer left float (`head_float`), with the embedding tables left float
(`embeddings_float`, `head_and_embeddings_float`), with `reduce_range`, and kerasbert's own export
(`kerasbert`: tables int8 with a scale per row, `int8_embedding_rows`). Scores and file sizes per variant.

Run: `KERAS_BACKEND=torch .venv/bin/python applications/int8_onnx_variants.py [conll|uci]`.
"""

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from recipe_tools import log_result  # noqa: F401  (first: it quiets TensorFlow's log)

import keras
import onnx
from fine_tuning_modes import DATASETS
from onnxruntime.quantization import QuantType, quantize_dynamic

from kerasbert.deployment.onnx_export import quantize_onnx_file
from kerasbert.deployment.onnx_runtime import load_onnx_task


def variants(graph):
    matmuls = [node.name for node in graph.graph.node if node.op_type == "MatMul"]
    every, logits = ["MatMul", "Gather"], [matmuls[-1]]
    return {"all": dict(op_types_to_quantize=every),
            "head_float": dict(op_types_to_quantize=every, nodes_to_exclude=logits),
            "embeddings_float": dict(op_types_to_quantize=["MatMul"]),
            "head_and_embeddings_float": dict(op_types_to_quantize=["MatMul"], nodes_to_exclude=logits),
            "reduce_range": dict(op_types_to_quantize=every, reduce_range=True)}


def score(folder, test, metric):
    task = load_onnx_task(folder)
    task.evaluate(test.head(64), verbose=0)  # warm-up
    start = time.perf_counter()
    value = float(task.evaluate(test, verbose=0)[metric])
    return {"score": round(value, 4), "seconds": round(time.perf_counter() - start, 2),
            "bytes": (Path(folder) / "model.onnx").stat().st_size}


def run(dataset):
    task_class, task_args, train, test, epochs, metric = DATASETS[dataset]()
    keras.utils.set_random_seed(0)
    model = task_class.from_preset("all_minilm_l6_v2_en", sequence_length=128, **task_args)
    model.fit(train, epochs=epochs, batch_size=32, seed=0, verbose=0)
    with tempfile.TemporaryDirectory() as scratch:
        base = model.export(Path(scratch) / "float32", format="onnx")
        print(json.dumps({"dataset": dataset, "variant": "float32", **score(base, test, metric)}), flush=True)
        graph = onnx.load(base / "model.onnx")
        for name, options in [*variants(graph).items(), ("kerasbert", None)]:
            folder = Path(scratch) / name
            shutil.copytree(base, folder)
            if options is None:
                quantize_onnx_file(folder / "model.onnx")
            else:
                quantize_dynamic(base / "model.onnx", folder / "model.onnx", weight_type=QuantType.QInt8,
                                 per_channel=True, **options)
            print(json.dumps({"dataset": dataset, "variant": name, **score(folder, test, metric)}), flush=True)


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else "conll")
