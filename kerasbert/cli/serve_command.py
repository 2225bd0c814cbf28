"""`kerasbert serve`: a saved task model behind HTTP (see `kerasbert.serving`)."""

import sys

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
@click.option("--max-inputs", type=click.IntRange(min=1), default=256, show_default=True,
              help="Inputs per request (else 413).")
@click.option("--max-chars", type=click.IntRange(min=1), default=20_000, show_default=True,
              help="Characters per text (else 413).")
def serve(model_file, host, port, max_batch, max_wait_ms, model_batch, max_inputs, max_chars):
    """Serve MODEL_FILE (.keras): POST /predict, GET /health, GET /metadata.

    \b
    Example:
        kerasbert serve sentiment.keras --port 8000 &
        curl -s localhost:8000/predict -d '["a lovely film", "dull"]'
    """
    try:
        import uvicorn

        from kerasbert.serving import ServingLimits, create_app
    except ImportError as error:
        raise click.ClickException(f"Serving needs {error.name}: pip install 'kerasbert[serve]'.") from None
    from kerasbert.cli.task_commands import load_task

    limits = ServingLimits(max_inputs=max_inputs, max_chars=max_chars, max_batch=max_batch, max_wait_ms=max_wait_ms,
                           model_batch=model_batch)
    app = create_app(load_task(model_file), limits)
    click.echo(f"Serving {model_file} on http://{host}:{port} (POST /predict, GET /health, GET /metadata)", err=True)
    # The event loop and the model's worker thread share the GIL; at Python's default 5 ms switch interval
    # each waited for the other, and 32 clients were served 125 texts/s; at 1 ms, 143 (benchmarks/serve_load.py).
    sys.setswitchinterval(0.001)
    uvicorn.run(app, host=host, port=port, log_level="warning")
