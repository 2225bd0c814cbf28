"""Load on `kerasbert serve`: 1, 8 and 32 concurrent clients over loopback, against in-process batch predict.

The server runs as the real command in its own process (`kerasbert serve MODEL`); each client posts one
real UCI review per request on its kept-alive connection, in a loop, for `--seconds` (`lean_http`: a client
that spends little of the cores the server shares). Printed per client count: requests/s, texts/s,
p50/p99 latency, errors (must be 0), the cores the server and the clients kept busy (both share
this machine), the mean rows per micro-batch (the server's `/metrics`) and the server's resident memory at start and
end; 3 s of load first trace the batch shapes.
The references are `predict` on the same texts in this process: in one call (length-sorted over all texts),
and in calls of the server's `--max-batch` texts in their order, as a server micro-batch holds them; the
target at 32 clients is texts/s >= 80% of it. The machine header (CPU, flags, matmul rates) comes first.

`--runtimes keras keras-int8 onnx-int8` serves the same model as each runtime in turn (Keras float32, Keras
int8 `quantize("int8")`, ONNX Runtime int8 through `serve --runtime onnx --quantize int8`), one table.
`--routes embed v1/embeddings` loads a text encoder (all-MiniLM-L6-v2 as `BertTextEncoder`, without MODEL)
through TEI's `/embed` and OpenAI's `/v1/embeddings` instead of `/predict` (one text per request as well), against
in-process `predict` (what `encode` runs) on the same texts.

The machine's speed drifts by tens of percent over minutes, so a reference taken once can flatter or sink the share.
`--rounds N` (Keras runtimes) also measures the share in N paired rounds at the most clients: the in-process calls
of `--max-batch` texts (the model loaded in this process, the server idle) for `--seconds`, then the served load
for `--seconds`, alternating; it prints each round's ratio and their median.

Run:
    .venv/bin/python benchmarks/serve_load.py [MODEL.keras] [--seconds 20] [--clients 1 8 32]
        [--runtimes keras keras-int8 onnx-int8] [--routes predict | --routes embed v1/embeddings] [--rounds 5]
Without MODEL, all_minilm_l6_v2_en is fine-tuned for one epoch on 256 UCI reviews first (runs/serve_load.keras).
"""

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
from _timing import QUIET_ENV, REPO, markdown_table
from lean_http import LeanConnection
from matmul_ceiling import measure, report
from run_all import header

COMMAND = Path(sys.executable).with_name("kerasbert")


def resident_mib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def batch_totals(url):
    """(micro-batches run, rows in them) so far, from the server's Prometheus `/metrics`."""
    totals = {}
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        name, _, value = line.rpartition(" ")
        if name in ("kerasbert_batch_rows_count", "kerasbert_batch_rows_sum"):
            totals[name] = float(value)
    return totals.get("kerasbert_batch_rows_count", 0.0), totals.get("kerasbert_batch_rows_sum", 0.0)


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


REQUESTS = {"predict": lambda text: [text], "embed": lambda text: {"inputs": [text]},
            "v1/embeddings": lambda text: {"input": [text], "model": "minilm"}}


def default_model(routes):
    import kerasbert as kb

    if routes != ["predict"]:
        path = REPO / "runs" / "serve_load_encoder.keras"
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            kb.BertTextEncoder.from_preset("all_minilm_l6_v2_en", sequence_length=128).save(path)
        return path
    path = REPO / "runs" / "serve_load.keras"
    if not path.exists():
        train = kb.data.load_dataset("uci_sentiment", "train").sample(256, random_state=0)[["text", "label"]]
        classifier = kb.BertClassifier.from_preset("all_minilm_l6_v2_en", sequence_length=128)
        classifier.fit(train, epochs=1, batch_size=32, verbose=0)
        path.parent.mkdir(exist_ok=True)
        classifier.save(path)
    return path


async def load(url, texts, clients, seconds, route="predict"):
    """Latencies (s) of successful requests and the error count, `clients` posting one text each to `route` in a
    loop for `seconds`."""
    latencies, errors = [], 0
    stop = time.perf_counter() + seconds

    async def client(offset):
        nonlocal errors
        host, port = url.removeprefix("http://").split(":")
        async with LeanConnection(host, int(port)) as connection:
            index = offset
            while time.perf_counter() < stop:
                started = time.perf_counter()
                status, _ = await connection.post_json(f"/{route}", REQUESTS[route](texts[index % len(texts)]))
                if status == 200:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors += 1
                index += clients

    await asyncio.gather(*(client(offset) for offset in range(clients)))
    return latencies, errors


def chunked_rate(model, texts, batch_size, model_batch, seconds):
    """Texts/s of in-process `predict` in calls of `batch_size` texts in their order (batches of `model_batch`),
    calling for about `seconds`."""
    done, index, started = 0, 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        chunk = [texts[(index + i) % len(texts)] for i in range(batch_size)]
        model.predict(chunk, batch_size=model_batch, verbose=0)
        done, index = done + batch_size, index + batch_size
    return done / (time.perf_counter() - started)


def paired_rounds(url, route, texts, args, model):
    """Per round, (in-process texts/s, served texts/s at the most clients), measured one after the other."""
    rounds = []
    for _ in range(args.rounds):
        reference = chunked_rate(model, texts, args.max_batch, args.model_batch, args.seconds)
        latencies, errors = asyncio.run(load(url, texts, max(args.clients), args.seconds, route))
        if errors:
            raise RuntimeError(f"/{route}: {errors} errors under load")
        rounds.append((reference, len(latencies) / args.seconds))
    return rounds


def in_process_texts_per_second(model_path, texts, batch_size, model_batch):
    """Texts/s of `predict` in this process: one call on all texts (batches of `batch_size`, sorted by length
    over the whole set), and one call per `batch_size` texts in their order (what a server micro-batch holds),
    predicted in length-sorted batches of `model_batch` as the server does."""
    import keras

    import kerasbert  # noqa: F401 - registers the classes

    model = keras.saving.load_model(model_path)
    model.predict(texts[:batch_size], batch_size=batch_size, verbose=0)
    started = time.perf_counter()
    model.predict(texts, batch_size=batch_size, verbose=0)
    whole = len(texts) / (time.perf_counter() - started)
    started = time.perf_counter()
    for start in range(0, len(texts), batch_size):
        model.predict(texts[start:start + batch_size], batch_size=model_batch, verbose=0)
    return whole, len(texts) / (time.perf_counter() - started)


def int8_model(model_path):
    """The Keras int8 copy of `model_path` (`quantize("int8")`), written once beside it."""
    path = model_path.with_name(model_path.stem + "_int8.keras")
    if not path.exists():
        import keras

        import kerasbert  # noqa: F401 - registers the classes

        model = keras.saving.load_model(model_path)
        model.quantize("int8")
        model.save(path)
    return path


def serve_arguments(runtime, model_path):
    """`kerasbert serve` arguments of a runtime: keras (the file), keras-int8, onnx / onnx-int8 (exported at start)."""
    return {"keras": [str(model_path)], "keras-int8": [str(int8_model(model_path))],
            "onnx": [str(model_path), "--runtime", "onnx"],
            "onnx-int8": [str(model_path), "--runtime", "onnx", "--quantize", "int8"]}[runtime]


def served_load(runtime, model_path, texts, args):
    """Table rows (one per route and client count), the server's memory at start and end, and the paired rounds
    per route (`paired_rounds`, with `--rounds`), for one runtime."""
    port = free_port()
    server = subprocess.Popen([str(COMMAND), "serve", *serve_arguments(runtime, model_path), "--port", str(port),
                               "--max-batch", str(args.max_batch), "--max-wait-ms", str(args.max_wait_ms),
                               "--model-batch", str(args.model_batch), "--model-workers", str(args.model_workers)],
                              env={**os.environ, **QUIET_ENV}, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.TransportError:
                if server.poll() is not None:
                    raise RuntimeError(f"kerasbert serve ({runtime}) exited with {server.returncode}") from None
                time.sleep(0.5)
        memory_at_start = resident_mib(server.pid)
        rows, rounds = [], {}
        for route in args.routes:
            asyncio.run(load(url, texts, max(args.clients), 3, route))  # warm-up: trace the batch shapes, not counted
            for clients in args.clients:
                server_cpu, client_cpu, batches = cpu_seconds(server.pid), time.process_time(), batch_totals(url)
                latencies, errors = asyncio.run(load(url, texts, clients, args.seconds, route))
                server_cpu, client_cpu = cpu_seconds(server.pid) - server_cpu, time.process_time() - client_cpu
                batch_count, batch_rows = (after - before for after, before in zip(batch_totals(url), batches))
                rate = len(latencies) / args.seconds
                rows.append([runtime, f"/{route}", clients, f"{rate:.1f}", f"{rate:.1f}",
                             f"{1000 * np.percentile(latencies, 50):.0f}", f"{1000 * np.percentile(latencies, 99):.0f}",
                             errors, f"{server_cpu / args.seconds:.2f}", f"{client_cpu / args.seconds:.2f}",
                             f"{batch_rows / max(batch_count, 1):.1f}"])
            if args.rounds and runtime.startswith("keras"):
                rounds[route] = paired_rounds(url, route, texts, args, in_process_model(runtime, model_path))
        memory = (memory_at_start, resident_mib(server.pid))
    finally:
        server.terminate()
        server.wait(30)
    return rows, memory, rounds


def in_process_model(runtime, model_path):
    """The model a Keras runtime serves, loaded in this process and warmed up."""
    import keras

    import kerasbert  # noqa: F401 - registers the classes

    model = keras.saving.load_model(int8_model(model_path) if runtime == "keras-int8" else model_path)
    model.predict(["a warm-up text"] * 8, verbose=0)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--runtimes", nargs="+", default=["keras"],
                        choices=["keras", "keras-int8", "onnx", "onnx-int8"])
    parser.add_argument("--routes", nargs="+", default=["predict"], choices=list(REQUESTS))
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--max-wait-ms", type=float, default=5)
    parser.add_argument("--model-batch", type=int, default=8)
    parser.add_argument("--model-workers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=0)
    args = parser.parse_args()
    print(header("benchmarks/serve_load.py " + " ".join(sys.argv[1:])))
    print(report(measure((1024,), 3)))

    import kerasbert as kb

    texts = kb.data.load_dataset("uci_sentiment", "test")["text"].tolist()
    model_path = Path(args.model) if args.model else default_model(args.routes)
    rows, memories, rounds = [], {}, {}
    for runtime in args.runtimes:
        runtime_rows, memories[runtime], rounds[runtime] = served_load(runtime, model_path, texts, args)
        rows += runtime_rows
    whole, chunked = in_process_texts_per_second(model_path, texts, args.max_batch, args.model_batch)
    print(f"\n## kerasbert serve under load ({model_path.name}, one UCI review per request, {args.seconds:.0f} s each, "
          f"micro-batches of <= {args.max_batch} rows, <= {args.max_wait_ms} ms wait, model batches of "
          f"{args.model_batch}, {args.model_workers} predicted at once)\n")
    print(markdown_table(["runtime", "route", "clients", "requests/s", "texts/s", "p50 ms", "p99 ms", "errors",
                          "server cores", "client cores", "rows per batch"], rows))
    for runtime, (start, end) in memories.items():
        print(f"\n{runtime} server resident memory: {start:.0f} MiB at start, {end:.0f} MiB at end")
    print(f"in-process predict (keras float32): {whole:.1f} texts/s in one call (all {len(texts)} texts, "
          f"length-sorted batches of {args.max_batch}), {chunked:.1f} texts/s in calls of {args.max_batch} texts in "
          f"order (model batches of {args.model_batch})")
    for runtime in args.runtimes:
        for route in args.routes:
            best = float(next(row for row in reversed(rows) if row[:2] == [runtime, f"/{route}"])[4])
            print(f"{runtime} /{route} at {args.clients[-1]} clients: {best:.1f} texts/s = {best / whole:.0%} of the "
                  f"one call, {best / chunked:.0%} of the calls of {args.max_batch}")
    for runtime, by_route in rounds.items():
        for route, pairs in by_route.items():
            ratios = [served / reference for reference, served in pairs]
            listed = ", ".join(f"{served:.1f}/{reference:.1f}" for reference, served in pairs)
            print(f"{runtime} /{route}, {len(pairs)} paired rounds at {max(args.clients)} clients (served/in-process "
                  f"texts/s): {listed}; shares {', '.join(f'{r:.0%}' for r in ratios)}, median "
                  f"{np.median(ratios):.0%}")


if __name__ == "__main__":
    main()
