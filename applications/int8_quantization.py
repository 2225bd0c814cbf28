"""int8 post-training quantisation, measured: a fine-tuned all_minilm_l6_v2_en in float32, after Keras'
`quantize("int8")`, and exported to ONNX (float32 and ONNX Runtime int8, `export(format="onnx")`), on UCI
sentiment (accuracy) and CoNLL-2003 (entity F1): file size, test score and inference time on the test set, in
one run on this machine.

Protocol: the full fine-tuning of `fine_tuning_modes.py` (UCI: 1 epoch; CoNLL-2003: 5,000 training sentences,
3 epochs; batch 32, at most 128 WordPiece tokens, seed 0), saved as `.keras`; the int8 model is that file
reloaded and quantised (Dense kernels, the fused QKV kernel included, and embedding tables to int8 with a scale
per output; activations quantised per token on the fly); the ONNX folders are exported from the float model and
run by `load_onnx_task` (int8 MatMul weights with a scale per output, activations quantised per batch). Inference:
`evaluate` on the whole test set, timed after one warm-up call. Q8BERT (Zafrir et al., 2019) reports under 1 point of loss.
With `--quantization-aware` one more row: the same fine-tuning from the same seed, quantisation-aware
(`FineTuningConfig("full", quantization_aware=True)`: Q8BERT's training on the int8 grid), then `quantize("int8")`.

Run: `.venv/bin/python applications/int8_quantization.py [uci conll] [--quantization-aware]`; results are appended
to `runs/int8_quantization.jsonl`.
"""

import argparse
import platform
import tempfile
import time
from pathlib import Path

from recipe_tools import log_result  # first: it quiets TensorFlow's log

import keras
from fine_tuning_modes import DATASETS

from kerasbert.deployment.onnx_runtime import load_onnx_task
from kerasbert.fine_tuning import FineTuningConfig


def timed_evaluate(model, test, metric):
    model.evaluate(test.head(64), verbose=0)  # warm-up: tracing
    start = time.perf_counter()
    results = model.evaluate(test, verbose=0)
    return float(results[metric]), time.perf_counter() - start


def fine_tuned(dataset, fine_tuning="full"):
    """The recipe's fine-tuned model of `dataset`, its test set and metric."""
    task_class, task_args, train, test, epochs, metric = DATASETS[dataset]()
    keras.utils.set_random_seed(0)
    model = task_class.from_preset("all_minilm_l6_v2_en", sequence_length=128, fine_tuning=fine_tuning, **task_args)
    model.fit(train, epochs=epochs, batch_size=32, seed=0, verbose=0)
    return model, test, metric


def run(dataset, quantization_aware=False):
    model, test, metric = fine_tuned(dataset)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        float_path, int8_path = Path(folder) / "float.keras", Path(folder) / "int8.keras"
        model.save(float_path)
        quantized = keras.saving.load_model(float_path)
        quantized.quantize("int8")
        quantized.save(int8_path)
        onnx_float = model.export(Path(folder) / "onnx_float32", format="onnx")
        onnx_int8 = model.export(Path(folder) / "onnx_int8", format="onnx", quantize="int8")
        candidates = (("float32", model, float_path), ("int8", quantized, int8_path),
                      ("onnx_float32", load_onnx_task(onnx_float), onnx_float / "model.onnx"),
                      ("onnx_int8", load_onnx_task(onnx_int8), onnx_int8 / "model.onnx"))
        if quantization_aware:
            aware, _, _ = fine_tuned(dataset, FineTuningConfig("full", quantization_aware=True))
            aware.quantize("int8")
            aware.save(Path(folder) / "q8bert.keras")
            candidates += (("quantization_aware_int8", aware, Path(folder) / "q8bert.keras"),)
        for name, candidate, path in candidates:
            score, seconds = timed_evaluate(candidate, test, metric)
            rows.append({"dataset": dataset, "model": name, "metric": metric, "score": round(score, 4),
                         "file_bytes": path.stat().st_size, "test_rows": len(test),
                         "inference_seconds": round(seconds, 2), "backend": keras.backend.backend(),
                         "machine": platform.processor() or platform.machine()})
    float_row = rows[0]
    for row in rows[1:]:
        row["size_vs_float"] = round(row["file_bytes"] / float_row["file_bytes"], 3)
        row["score_change_points"] = round(100 * (row["score"] - float_row["score"]), 2)
        row["time_vs_float"] = round(row["inference_seconds"] / float_row["inference_seconds"], 2)
    for row in rows:
        log_result(row, "int8_quantization")
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", choices=["uci", "conll"], default=["uci", "conll"])
    parser.add_argument("--quantization-aware", action="store_true",
                        help="add Q8BERT's row: quantisation-aware fine-tuning, then int8")
    arguments = parser.parse_args()
    for dataset in arguments.datasets:
        run(dataset, arguments.quantization_aware)
