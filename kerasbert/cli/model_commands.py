"""`kerasbert pretrain`, `convert`, `export` and `presets`: checkpoints and saved models from the shell."""

import time

import click

from kerasbert.cli.task_commands import load_task


def parameter_count(config):
    """Parameters of a backbone config of any family (embeddings, projection, distinct encoder blocks, pooler), as
    `count_params()` gives.

    Example:
    >>> parameter_count({"vocabulary_size": 30522, "num_layers": 12, "hidden_dim": 768, "intermediate_dim": 3072,
    ...                  "max_sequence_length": 512, "num_segments": 2})
    109482240
    """
    hidden, inner = config["hidden_dim"], config["intermediate_dim"]
    width = config.get("embedding_dim") or hidden  # ALBERT and ELECTRA: narrower tables, then a projection
    embeddings = (config["vocabulary_size"] + config["max_sequence_length"] + config["num_segments"] + 2) * width
    projection = width * hidden + hidden if config.get("embedding_dim") else 0
    block = 4 * (hidden * hidden + hidden) + 2 * hidden * inner + inner + hidden + 4 * hidden
    blocks = (config.get("num_block_groups") or config["num_layers"]) * config.get("blocks_per_group", 1)
    pooler = hidden * hidden + hidden if config.get("use_pooler", True) else 0
    return embeddings + projection + blocks * block + pooler


@click.command()
def presets():
    """List the built-in presets with their parameter counts and float32 sizes.

    \b
    Example:
        kerasbert presets
    """
    from kerasbert.presets.registry import PRESETS

    click.echo(f"{'preset':<26} {'parameters':>13} {'float32':>9}  description")
    for name in sorted(PRESETS):
        count = parameter_count(PRESETS[name]["config"])
        click.echo(f"{name:<26} {count:>13,} {count * 4 / 2**20:>6.0f} MB  {PRESETS[name]['description']}")


@click.command()
@click.argument("source")
@click.argument("destination")
@click.option("--format", "fmt", type=click.Choice(["kerasbert", "hf"]), default="kerasbert", show_default=True)
@click.option("--allow-pickle", is_flag=True, help="Permit reading a HF pytorch_model.bin.")
def convert(source, destination, fmt, allow_pickle):
    """Convert SOURCE (HF folder, Google TF checkpoint, kerasbert preset or built-in name) to DESTINATION.

    Task heads (pre-training, classifier, QA) travel with the backbone.

    \b
    Example:
        kerasbert convert uncased_L-2_H-128_A-2 bert_tiny_hf --format hf
    """
    from kerasbert.families.preset_conversion import convert_preset

    convert_preset(source, destination, fmt, allow_pickle)
    click.echo(f"Wrote {fmt} preset {destination}", err=True)


@click.command()
@click.argument("model_file")
@click.argument("destination")
@click.option("--format", "fmt", type=click.Choice(["saved_model", "onnx"]), default="saved_model",
              show_default=True, help="saved_model: TensorFlow, raw strings in. onnx: a folder for ONNX Runtime.")
@click.option("--quantize", type=click.Choice(["int8"]), default=None, help="With --format onnx: ONNX Runtime int8.")
def export(model_file, destination, fmt, quantize):
    """Export MODEL_FILE (.keras) as a TensorFlow SavedModel whose `serve` signature takes raw strings, or as an
    ONNX folder (model.onnx, the tokenizer, the config) that `kerasbert serve` and `predict` run.

    \b
    Example:
        kerasbert export sentiment.keras sentiment_savedmodel
        kerasbert export sentiment.keras sentiment_onnx --format onnx --quantize int8
    """
    if quantize and fmt != "onnx":
        raise click.BadParameter("--quantize int8 applies to --format onnx.", param_hint="--quantize")
    load_task(model_file).export(destination, format=fmt, quantize=quantize)
    click.echo(f"Wrote {'SavedModel' if fmt == 'saved_model' else 'ONNX folder'} {destination}", err=True)


@click.command()
@click.argument("sources", nargs=-1, required=True)
@click.option("--preset", default="bert_tiny_en_uncased", show_default=True,
              help="Architecture and vocabulary to start from.")
@click.option("--from-scratch/--from-weights", default=True, show_default=True,
              help="Random initial weights (offline), or the preset's pre-trained weights.")
@click.option("--output", required=True, help="The kerasbert preset folder to write.")
@click.option("--epochs", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True)
@click.option("--max-length", type=click.IntRange(min=5), default=128, show_default=True,
              help="Tokens per pre-training example.")
@click.option("--next-sentence/--no-next-sentence", default=True, show_default=True,
              help="Train next-sentence prediction as well as the masked LM.")
@click.option("--seed", type=int, default=0, show_default=True)
def pretrain(sources, preset, from_scratch, output, epochs, batch_size, max_length, next_sentence, seed):
    """Pre-train (masked LM + next sentence) on text files or folders of .txt files; write a preset.

    Each file is a document; every task model's from_preset reads the written folder.

    \b
    Example:
        kerasbert pretrain austen/ --output austen_bert --epochs 3
        kerasbert fit uci_sentiment --preset austen_bert
    """
    import pandas as pd

    from kerasbert.data.text_corpus import load_text_corpus
    from kerasbert.tasks import BertPretrainer

    documents = pd.concat([load_text_corpus(source) for source in sources], ignore_index=True)
    model = BertPretrainer.from_preset(preset, load_weights=not from_scratch, max_sequence_length=max_length,
                                       next_sentence="nsp" if next_sentence else None)
    click.echo(f"Pre-training {preset} on {len(documents)} documents", err=True)
    started = time.perf_counter()
    model.fit(documents, epochs=epochs, batch_size=batch_size, seed=seed)
    model.save_to_preset(output)
    click.echo(f"Wrote preset {output} ({time.perf_counter() - started:.0f} s)", err=True)
