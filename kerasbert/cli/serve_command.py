"""`kerasbert serve`: a saved task model behind HTTP (see `kerasbert.serving`)."""

import contextlib
import os
import sys
import tempfile
from pathlib import Path

import click


@click.command()
@click.argument("model_file")
@click.option("--host", default="127.0.0.1", show_default=True, help="0.0.0.0 to accept other machines.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--max-batch", type=click.IntRange(min=1), default=32, show_default=True, help="Rows per micro-batch.")
@click.option("--max-wait-ms", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="How long a request waits for others to share its batch.")
@click.option("--model-batch", type=click.IntRange(min=1), default=8, show_default=True,
              help="Rows per model call inside a micro-batch, sorted by length (less padding).")
@click.option("--model-workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Micro-batches predicted at once, each in its own thread (2 can pay for a Keras model on few "
                   "cores; measure with benchmarks/serve_load.py).")
@click.option("--max-batch-tokens", type=click.IntRange(min=1), default=16_384, show_default=True,
              help="Tokens per micro-batch: a request that would pass it waits for the next batch.")
@click.option("--max-inputs", type=click.IntRange(min=1), default=256, show_default=True,
              help="Inputs per request (else 413).")
@click.option("--max-chars", type=click.IntRange(min=1), default=20_000, show_default=True,
              help="Characters per text (else 413).")
@click.option("--runtime", type=click.Choice(["keras", "onnx"]), default=None,
              help="keras: the .keras file in Keras. onnx: ONNX Runtime, on an exported ONNX folder or on a .keras "
                   "file exported at start (float32; int8 with --quantize int8). Default: the file's own.")
@click.option("--quantize", type=click.Choice(["int8"]), default=None,
              help="With --runtime onnx on a .keras file: export ONNX Runtime int8.")
def serve(model_file, host, port, max_batch, max_wait_ms, model_batch, model_workers, max_batch_tokens, max_inputs,
          max_chars, runtime, quantize):
    """Serve MODEL_FILE (.keras, or a folder of `kerasbert export --format onnx`): POST /predict, GET /health,
    GET /metadata; a text encoder also POST /embed and /v1/embeddings (TEI, OpenAI), a reranker POST /rerank.

    \b
    Example:
        kerasbert serve sentiment.keras --port 8000 &
        curl -s localhost:8000/predict -d '["a lovely film", "dull"]'
        kerasbert serve sentiment.keras --runtime onnx --quantize int8
    """
    try:
        import uvicorn

        from kerasbert.serving import ServingLimits, create_app
    except ImportError as error:
        raise click.ClickException(f"Serving needs {error.name}: pip install 'kerasbert[serve]'.") from None
    limits = ServingLimits(max_inputs=max_inputs, max_chars=max_chars, max_batch=max_batch, max_wait_ms=max_wait_ms,
                           model_batch=model_batch, model_workers=model_workers, max_batch_tokens=max_batch_tokens)
    with served_model(model_file, runtime, quantize) as model:
        app = create_app(model, limits, model_id=Path(model_file).name)
        click.echo(f"Serving {model_file} ({getattr(model, 'runtime', 'keras')}) on http://{host}:{port} (POST "
                   "/predict, GET /health, GET /metadata)", err=True)
        # The event loop and the model's worker thread share the GIL; at Python's default 5 ms switch interval
        # each waited for the other, and 32 clients were served 125 texts/s; at 1 ms, 143 (serve_load.py).
        sys.setswitchinterval(0.001)
        uvicorn.run(app, host=host, port=port, log_level="warning")


@contextlib.contextmanager
def served_model(model_file, runtime, quantize):
    """The model `serve` runs: the file as it is, or a `.keras` file exported to ONNX in a temporary folder."""
    from kerasbert.cli.task_commands import load_task
    from kerasbert.deployment.onnx_runtime import is_onnx_folder, load_onnx_task

    onnx_folder = is_onnx_folder(model_file)
    if runtime == "keras" and onnx_folder:
        raise click.BadParameter(f"{model_file} is an ONNX folder; it runs with --runtime onnx.",
                                 param_hint="--runtime")
    if quantize and (runtime != "onnx" or onnx_folder):
        raise click.BadParameter("--quantize int8 exports a .keras file with --runtime onnx; an ONNX folder keeps "
                                 "the quantisation it was exported with.", param_hint="--quantize")
    if runtime != "onnx" or onnx_folder:
        yield load_task(model_file)
        return
    with tempfile.TemporaryDirectory() as scratch:
        click.echo(f"Exporting {model_file} to ONNX ({quantize or 'float32'})...", err=True)
        folder = load_task(model_file).export(os.path.join(scratch, "onnx"), format="onnx", quantize=quantize)
        yield load_onnx_task(folder)
