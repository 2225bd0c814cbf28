"""The ONNX graphs alone: kerasbert's exported `model.onnx` against the peers' HF -> ONNX Runtime graph.

`deployment.py` times each runtime end to end from raw text; this times only ONNX Runtime's `session.run` on the
same token ids (batch 1 and 32, 128 tokens, no padding), each in the session its runtime makes (kerasbert's
`onnx_session`, the peers' default `InferenceSession`), both graphs in one process, interleaved round by round
(median of 8 rounds x 20 calls at batch 1, 8 x 3 at batch 32), so the ratio is the graphs' and not the tokenizers'
or the machine's drift. Then each runtime as a user calls it on one raw text, interleaved the same way (batch 1,
the speed texts in turn): kerasbert's ONNX folder `predict([text])` (a DataFrame of label, score and
probabilities) against the peers' tokenizer call, `session.run` and argmax. The graphs are the ones
`deployment.py` writes under runs/deployment/<preset>/ (it is run first when they are missing): kerasbert `export(format="onnx")` float32 and `quantize="int8"`; HF
`BertForSequenceClassification` through `torch.onnx`, ONNX Runtime's BERT optimizer and `quantize_dynamic`.

Run:
    .venv/bin/python benchmarks/onnx_graphs.py [--presets all_minilm_l6_v2_en bert_small_en_uncased]
"""

import argparse
import sys
import time

import numpy as np
from _timing import cores, markdown_table, median, ratio, run_worker
from deployment import RUNS, SEQUENCE_LENGTH, data, runner
from run_all import header

ROUNDS = 8
CALLS = {1: 20, 32: 3}
GRAPHS = {"kerasbert": {"float32": "onnx_float32/model.onnx", "int8": "onnx_int8/model.onnx"},
          "HF -> ONNX Runtime (optimized)": {"float32": "hf_ort_float32.onnx", "int8": "hf_ort_int8.onnx"}}


def feeds(session, token_ids):
    """The session's inputs for `token_ids` (kerasbert's names and int32, or HF's and int64), no padding."""
    values = {"token_ids": token_ids, "input_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "token_type_ids": np.zeros_like(token_ids), "padding_mask": np.ones_like(token_ids),
              "attention_mask": np.ones_like(token_ids)}
    dtype = {"tensor(int32)": np.int32, "tensor(int64)": np.int64}
    return {item.name: values[item.name].astype(dtype[item.type]) for item in session.get_inputs()}


def interleaved(sessions, batch):
    """{name: median seconds of `session.run`} over rounds that take each session in turn."""
    token_ids = np.random.default_rng(batch).integers(1000, 20000, (batch, SEQUENCE_LENGTH))
    inputs = {name: feeds(session, token_ids) for name, session in sessions.items()}
    times = {name: [] for name in sessions}
    for _ in range(ROUNDS):
        for name, session in sessions.items():
            session.run(None, inputs[name])
            for _ in range(CALLS[batch]):
                start = time.perf_counter()
                session.run(None, inputs[name])
                times[name].append(time.perf_counter() - start)
    return {name: median(values) for name, values in times.items()}


def from_text(preset, variant):
    """(kerasbert, peers) median seconds to predict one raw text, calls interleaved round by round."""
    texts = data()[0]
    predictors = {name: runner(runtime, variant, RUNS / preset, preset)[0]
                  for name, runtime in (("kerasbert", "onnx"), ("peers", "hf-ort"))}
    times = {name: [] for name in predictors}
    for round_number in range(ROUNDS):
        for name, predict in predictors.items():
            predict(texts[:1], 1)
            for call in range(CALLS[1]):
                text = texts[(round_number * CALLS[1] + call) % len(texts)]
                start = time.perf_counter()
                predict([text], 1)
                times[name].append(time.perf_counter() - start)
    return median(times["kerasbert"]), median(times["peers"])


def main():
    import onnxruntime

    from kerasbert.deployment.onnx_runtime import onnx_session

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["all_minilm_l6_v2_en", "bert_small_en_uncased"])
    args = parser.parse_args()
    print(header("benchmarks/onnx_graphs.py " + " ".join(sys.argv[1:])), flush=True)
    print(f"ONNX Runtime {onnxruntime.__version__}, {cores()} intra-op threads", flush=True)
    for preset in args.presets:
        if not (RUNS / preset / "done").exists():
            run_worker("deployment.py", "--prepare", preset, keras_backend="torch")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = cores()
        rows = []
        for variant in ("float32", "int8"):
            paths = {name: str(RUNS / preset / files[variant]) for name, files in GRAPHS.items()}
            sessions = {name: onnx_session(path, cores()) if name == "kerasbert" else
                        onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
                        for name, path in paths.items()}
            for batch in CALLS:
                ours, peers = interleaved(sessions, batch).values()
                rows.append([variant, batch, 1000 * ours, 1000 * peers, ratio(peers, ours)])
        headers = ["weights", "batch", "kerasbert ms", "HF -> ONNX Runtime ms", "kerasbert speed vs peers"]
        print(f"\n## {preset}: the graphs alone\n\n" + markdown_table(headers, rows), flush=True)
        rows = [[variant, 1, *(1000 * seconds for seconds in from_text(preset, variant)), ""] for variant in
                ("float32", "int8")]
        for row in rows:
            row[4] = ratio(row[3], row[2])
        print(f"\n## {preset}: from one raw text to its label\n\n" + markdown_table(headers, rows), flush=True)


if __name__ == "__main__":
    main()
