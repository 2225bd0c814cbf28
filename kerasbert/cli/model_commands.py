"""`kerasbert prepare-pretraining`, `pretrain`, `convert`, `export` and `presets`: corpora, checkpoints and saved
models from the shell."""

import time

import click

from kerasbert.cli.task_commands import load_task


def parameter_count(config):
    """Parameters of a backbone config of BERT's shape (BERT, ALBERT, RoBERTa, DistilBERT, ELECTRA: embeddings,
    projection, distinct encoder blocks, pooler), as `count_params()` gives. The registry states the count of the
    other families' presets (`parameters`).

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
        count = PRESETS[name].get("parameters") or parameter_count(PRESETS[name]["config"])
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


@click.command("prepare-pretraining")
@click.argument("sources", nargs=-1, required=True)
@click.option("--output", required=True, help="The shard folder to write; run again to finish an interrupted run.")
@click.option("--preset", default="bert_tiny_en_uncased", show_default=True,
              help="The model whose tokenizer tokenises the text.")
@click.option("--document-separator", type=click.Choice(["file", "blank_line"]), default="file", show_default=True,
              help="Plain text: one document per file, or blank lines between documents (BERT's format).")
@click.option("--text-field", default="text", show_default=True, help="The field of a JSON Lines record with the text.")
@click.option("--shard-megabytes", type=click.FloatRange(min=0, min_open=True), default=64.0, show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Processes tokenising [default: CPUs].")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Shuffles the documents inside each shard.")
def prepare_pretraining_command(sources, output, preset, document_separator, text_field, shard_megabytes, workers,
                                seed):
    """Tokenise SOURCES (text files, .gz, JSON Lines, folders of them) into shards that `kerasbert pretrain`
    streams: a corpus larger than memory, prepared in parallel once.

    \b
    Example:
        kerasbert prepare-pretraining wiki/ books.jsonl.gz --output corpus_shards --preset bert_base_en_uncased
        kerasbert pretrain corpus_shards --preset bert_base_en_uncased --output my_bert --steps-per-epoch 1000
    """
    from kerasbert.data.pretraining_shards import prepare_pretraining
    from kerasbert.families.family import tokenizer_from_preset

    started = time.perf_counter()
    manifest = prepare_pretraining(list(sources), output, tokenizer_from_preset(preset),
                                   shard_megabytes=shard_megabytes, num_workers=workers, seed=seed,
                                   document_separator=document_separator, text_field=text_field)
    click.echo(f"Wrote {len(manifest['shards'])} shards to {output}: {manifest['documents']:,} documents, "
               f"{manifest['tokens']:,} tokens ({time.perf_counter() - started:.0f} s)", err=True)


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
@click.option("--masking", type=click.Choice(["token", "whole_word", "span"]), default=None,
              help="What is masked as a unit: tokens (BERT), whole words, or spans of words (SpanBERT) "
                   "[default: token, or the preset's pre-training options].")
@click.option("--span-boundary-objective", is_flag=True,
              help="Also predict each masked token from its span's boundaries (SpanBERT's SBO).")
@click.option("--steps-per-epoch", type=click.IntRange(min=1), default=None,
              help="With a shard folder: batches per epoch [default: about one pass].")
@click.option("--optimizer", type=click.Choice(["adamw", "lamb"]), default="adamw", show_default=True)
@click.option("--gradient-accumulation-steps", type=click.IntRange(min=2), default=None,
              help="Update once every this many batches (batches of batch-size x this).")
@click.option("--learning-rate", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Peak learning rate [default: 1e-4].")
@click.option("--backup-dir", default=None, help="Save the state each epoch; run again to continue after a kill.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--num-processes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes of a data-parallel run (JAX backend): one per host or GPU, the same command in each.")
@click.option("--process-id", type=click.IntRange(min=0), default=0, show_default=True,
              help="This process's number, 0 to num-processes - 1; 0 is the coordinator.")
@click.option("--coordinator", default=None, help="host:port of process 0, reachable from every process.")
@click.option("--join-timeout", type=click.IntRange(min=1), default=120, show_default=True,
              help="Seconds to wait for the coordinator.")
def pretrain(sources, preset, from_scratch, output, epochs, batch_size, max_length, next_sentence, masking,
             span_boundary_objective, steps_per_epoch, optimizer, gradient_accumulation_steps, learning_rate, backup_dir, seed, num_processes, process_id,
             coordinator, join_timeout):
    """Pre-train (masked LM + next sentence) on text files or folders of .txt files, or on one shard folder of
    `kerasbert prepare-pretraining` (streamed); write a preset.

    Each file is a document; every task model's from_preset reads the written folder.

    \b
    Example:
        kerasbert pretrain austen/ --output austen_bert --epochs 3
        kerasbert pretrain corpus_shards --output my_bert --optimizer lamb --gradient-accumulation-steps 32
        kerasbert pretrain austen/ --output austen_spanbert --no-next-sentence --masking span --span-boundary-objective
        KERAS_BACKEND=jax kerasbert pretrain corpus_shards --output my_bert --batch-size 256 \\
            --num-processes 2 --process-id 0 --coordinator 10.0.0.1:1234   # and --process-id 1 on the other host
        kerasbert fit uci_sentiment --preset austen_bert

    With several processes --batch-size is the global batch; each process reads its own shards and only
    process 0 writes the preset.
    """
    import pandas as pd

    from kerasbert.data.pretraining_shards import is_shard_folder, read_manifest
    from kerasbert.data.text_corpus import load_text_corpus
    from kerasbert.tasks import BertPretrainer

    if process_id >= num_processes:
        raise click.BadParameter(f"{process_id} is not a process of {num_processes}: number them 0 to "
                                 f"{num_processes - 1}.", param_hint="--process-id")
    if num_processes > 1:
        if coordinator is None:
            raise click.BadParameter("several processes need the coordinator's host:port.", param_hint="--coordinator")
        from kerasbert.training.distribution import join_processes

        join_processes(coordinator, num_processes, process_id, timeout=join_timeout)
    options = {"optimizer": optimizer, "gradient_accumulation_steps": gradient_accumulation_steps,
               "learning_rate": learning_rate, "backup_dir": backup_dir}
    if len(sources) == 1 and is_shard_folder(sources[0]):
        data = sources[0]
        described = f"{read_manifest(data)['documents']:,} documents (streamed)"
        options["steps_per_epoch"] = steps_per_epoch
    else:
        if steps_per_epoch is not None:
            raise click.BadParameter("applies to a shard folder (kerasbert prepare-pretraining).",
                                     param_hint="--steps-per-epoch")
        data = pd.concat([load_text_corpus(source) for source in sources], ignore_index=True)
        described = f"{len(data)} documents"
    model = BertPretrainer.from_preset(preset, load_weights=not from_scratch, max_sequence_length=max_length,
                                       next_sentence="nsp" if next_sentence else None,
                                       **({"masking": {"strategy": masking}} if masking else {}),
                                       **({"span_boundary_objective": True} if span_boundary_objective else {}))
    click.echo(f"Pre-training {preset} on {described}", err=True)
    started = time.perf_counter()
    model.fit(data, epochs=epochs, batch_size=batch_size, seed=seed,
              **{name: value for name, value in options.items() if value is not None})
    if process_id == 0:
        model.save_to_preset(output)
        click.echo(f"Wrote preset {output} ({time.perf_counter() - started:.0f} s)", err=True)
