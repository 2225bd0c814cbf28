"""`kerasbert fit`, `evaluate` and `predict`: task models on data files, from the shell."""

import contextlib
import functools
import json
import sys
import time

import click

from kerasbert.atomic_files import write_text_atomically
from kerasbert.cli.tables import is_lines, read_table, write_table
from kerasbert.saved_files import saved_task

DEFAULT_PRESET = "all_minilm_l6_v2_en"
# --task names -> task classes; `infer_task` picks one from the columns when --task is not given.
TASK_CLASSES = {
    "classifier": "BertClassifier",
    "token-classifier": "BertTokenClassifier",
    "question-answerer": "BertQuestionAnswerer",
    "multiple-choice": "BertMultipleChoice",
}
TASK_COLUMNS = {  # in the order they are tried
    "token-classifier": ("tokens", "tags"),
    "question-answerer": ("question", "context", "answer_texts"),
    "multiple-choice": ("context", "endings", "label"),
    "classifier": ("text", "label"),
}


TRAINING_OPTIONS = [  # `model.fit` keyword arguments, given to `fit` as one `training` dict
    click.option("--epochs", type=click.IntRange(min=1), default=1, show_default=True),
    click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True),
    click.option("--learning-rate", type=float, help="Peak AdamW rate (default: by model size)."),
    click.option("--seed", type=int, default=0, show_default=True),
    click.option("--backup-dir", help="Resume from here after a crash (state saved every epoch)."),
]


COLUMN_OPTION = click.option(
    "--column", "column_pairs", multiple=True, metavar="ROLE=NAME",
    help="Read the ROLE column (text, text_pair, label, tokens, tags, ...) from the data's NAME column, e.g. "
         "--column text=review (repeatable).")


def parse_columns(pairs):
    """`--column` values -> `{role: column name}`, as a task model's `columns=` takes them.

    Example:
    >>> parse_columns(["text=review", "label=stars"])
    {'text': 'review', 'label': 'stars'}
    """
    columns = {}
    for pair in pairs:
        role, equals, name = pair.partition("=")
        if not equals or not role.strip() or not name:
            raise click.BadParameter(f"{pair!r} is not ROLE=NAME (e.g. text=review).", param_hint="--column")
        columns[role.strip()] = name
    return columns


def with_training_options(command):
    """`command` with the `TRAINING_OPTIONS` flags, which reach it as one `training` dict of `model.fit` arguments."""

    @functools.wraps(command)
    def run(**options):
        training = {name: options.pop(name) for name in ("epochs", "batch_size", "learning_rate", "seed", "backup_dir")}
        return command(training=training, **options)

    return functools.reduce(lambda function, option: option(function), reversed(TRAINING_OPTIONS), run)


def infer_task(columns, named=None):
    """The --task whose columns the data has, as `fit(df)` reads them; `named` ({role: column}, from --column)
    counts a role as present when its named column is.

    Example:
    >>> infer_task(["text", "label"]), infer_task(["tokens", "tags"]), infer_task(["review", "label"], {"text": "review"})
    ('classifier', 'token-classifier', 'classifier')
    """
    present = set(columns) | {role for role, name in (named or {}).items() if name in set(columns)}
    for task, needed in TASK_COLUMNS.items():
        if set(needed) <= present:
            return task
    expected = "; ".join(f"{task}: {', '.join(needed)}" for task, needed in TASK_COLUMNS.items())
    raise ValueError(f"Cannot tell the task from the columns {', '.join(map(str, columns))}. Expected columns "
                     f"({expected}); or name yours, e.g. --column text=<yours> --column label=<yours>, and pass "
                     f"--task.")


def parse_task_args(pairs):
    """`key=value` strings -> task arguments; values are JSON where they parse (numbers, lists), else text.

    Example:
    >>> parse_task_args(["problem_type=multiclass", "labels=[\\"neg\\", \\"pos\\"]"])
    {'problem_type': 'multiclass', 'labels': ['neg', 'pos']}
    """
    arguments = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.isidentifier():
            raise click.BadParameter(f"{pair!r} is not key=value (e.g. problem_type=regression).",
                                     param_hint="--task-arg")
        try:
            arguments[key] = json.loads(value)
        except json.JSONDecodeError:
            arguments[key] = value
    return arguments


def load_task(path):
    from kerasbert.tasks.task_files import load_task as load

    return load(path)


def prepare_output_folder(output, suffix):
    """Refuse an output name without `suffix` and create its folder, before any training: a run must not
    end in an error for a path that could be checked first."""
    from pathlib import Path

    path = Path(output)
    if path.suffix != suffix:
        raise click.BadParameter(f"{output!r} does not end in {suffix}; name the file e.g. model{suffix}.",
                                 param_hint="--output")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise click.BadParameter(f"cannot create the folder of {output!r} ({error.strerror}).",
                                 param_hint="--output") from None


@contextlib.contextmanager
def progress_on_stderr():
    """Keras' progress on stderr (stdout keeps the results): a bar on a terminal, plain lines in a log."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def echo_json(results):
    click.echo(json.dumps(results, indent=2, default=float))


@click.command()
@click.argument("data")
@click.option("--task", type=click.Choice(list(TASK_CLASSES)), help="Default: inferred from the columns.")
@click.option("--preset", default=DEFAULT_PRESET, show_default=True,
              help="A built-in name, or a kerasbert / HF / Google checkpoint folder.")
@click.option("--validation", "validation_source", help="Validation data (file or shipped name:split).")
@click.option("--max-length", type=click.IntRange(min=3), help="Longest packed input in tokens (default: the model's).")
@click.option("--task-arg", "task_args", multiple=True, metavar="KEY=VALUE",
              help="A task argument, e.g. problem_type=regression or 'columns={\"text\": \"review\"}' (repeatable).")
@COLUMN_OPTION
@click.option("--output", default="model.keras", show_default=True, help="The .keras file to write.")
@click.option("--report", "report_dir", help="Write curves, metrics.json and a model card to this folder.")
@with_training_options
def fit(data, task, preset, validation_source, max_length, task_args, column_pairs, output, report_dir, training):
    """Fine-tune a task model on DATA and save it.

    DATA is a CSV/TSV/JSONL/Parquet file or a shipped data set (uci_sentiment, or uci_sentiment:train).
    The task follows from the columns: text+label (classification or regression; text_pair for pairs),
    tokens+tags (token classification), question+context+answer_texts (QA), context+endings+label
    (multiple choice).

    \b
    Example:
        kerasbert fit uci_sentiment --epochs 2 --output sentiment.keras --report sentiment_report
        kerasbert fit reviews.csv --column text=review --column label=stars
    """
    arguments = parse_task_args(task_args)
    columns = {**(arguments.pop("columns", None) or {}), **parse_columns(column_pairs)}
    prepare_output_folder(output, ".keras")
    train = read_table(data)
    validation = read_table(validation_source) if validation_source else None
    task = task or infer_task(train.columns, columns)

    import kerasbert.tasks as applications  # TensorFlow: after the arguments and the data are checked

    task_class = getattr(applications, TASK_CLASSES[task])
    model = task_class.from_preset(preset, sequence_length=max_length, **arguments,
                                   **({"columns": columns} if columns else {}))
    click.echo(f"Fine-tuning {type(model).__name__} on {preset}: {len(train)} rows of {data}", err=True)
    started = time.perf_counter()
    with progress_on_stderr():
        history = model.fit(train, validation_data=validation, **training)
    seconds = time.perf_counter() - started
    model.save(output)
    click.echo(f"Saved {output} ({seconds:.0f} s of training)", err=True)
    results = model.evaluate(validation, batch_size=training["batch_size"], verbose=0) if validation is not None \
        else None
    if results is not None:
        echo_json(results)
    if report_dir:
        from kerasbert.plots import write_report

        write_report(model, report_dir, validation if validation is not None else train, history=history,
                     data_name=validation_source or f"{data} (the training data)",
                     training={"data": data, "rows": len(train)},
                     hyperparameters={"preset": preset, "epochs": training["epochs"],
                                      "batch_size": training["batch_size"], "max_length": model.sequence_length,
                                      "learning_rate": training["learning_rate"] or "default",
                                      "seed": training["seed"]}, model_file=output)
        click.echo(f"Report in {report_dir}", err=True)


def read_for_model(model_file, data, columns, with_labels):
    """DATA read and its columns checked against MODEL_FILE's saved columns, before TensorFlow loads the model;
    returns the table and the columns to read (lines of text, from stdin or a .txt file, are the model's text)."""
    frame = read_table(data, default_split="test")
    saved = saved_task(model_file)
    if is_lines(data):
        columns = {**{role: role for role in ("text", "text_pair") if role in frame.columns}, **columns}
    saved.with_columns(columns).check_columns(frame.columns, with_labels)
    return frame, columns or None


@click.command()
@click.argument("model_file")
@click.argument("data")
@COLUMN_OPTION
@click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True)
@click.option("--output", help="Also write the metrics to this JSON file.")
def evaluate(model_file, data, column_pairs, batch_size, output):
    """Score MODEL_FILE (.keras) on labelled DATA; prints the metrics as JSON.

    \b
    Example:
        kerasbert evaluate sentiment.keras uci_sentiment:test
        kerasbert evaluate sentiment.keras reviews.csv --column text=review --column label=stars
    """
    frame, columns = read_for_model(model_file, data, parse_columns(column_pairs), with_labels=True)
    model = load_task(model_file)
    with progress_on_stderr():
        results = model.evaluate(frame, batch_size=batch_size, columns=columns)
    echo_json(results)
    if output:
        write_text_atomically(output, json.dumps(results, indent=2, default=float) + "\n")


@click.command()
@click.argument("model_file")
@click.argument("data", default="-")
@COLUMN_OPTION
@click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True)
@click.option("--output", help="A .jsonl or .csv file (default: stdout).")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), help="Default: from --output, else jsonl.")
def predict(model_file, data, column_pairs, batch_size, output, fmt):
    """Predict with MODEL_FILE (.keras) on DATA (a file, a shipped set, a .txt file or `-` for stdin: one text
    per line, a tab before a text's pair).

    Each row comes back with the input's columns and the predictions (labels and scores, tags and
    entities with character spans, answers with character spans); a prediction column whose name the
    input already uses is prefixed `predicted_`.

    \b
    Example:
        printf 'a lovely film\\nawful acting\\n' | kerasbert predict sentiment.keras
        kerasbert predict ner.keras sentences.jsonl --output entities.jsonl
        kerasbert predict sentiment.keras reviews.csv --column text=review
    """
    import pandas as pd

    if data == "-" and sys.stdin.isatty():
        click.echo("Reading texts from the terminal, one per line; end with Ctrl-D. (Or give a file: kerasbert "
                   "predict MODEL reviews.csv)", err=True)
    frame, columns = read_for_model(model_file, data, parse_columns(column_pairs), with_labels=False)
    model = load_task(model_file)
    with progress_on_stderr():
        predictions = model.predict(frame, batch_size=batch_size, columns=columns)
    clashing = set(predictions.columns) & set(frame.columns)
    predictions = predictions.rename(columns={name: f"predicted_{name}" for name in clashing})
    write_table(pd.concat([frame, predictions.set_axis(frame.index)], axis=1), output, fmt)
