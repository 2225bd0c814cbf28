"""The click group behind the `kerasbert` console script, and its one-line errors."""

import os
import sys
import warnings

import click

from kerasbert.cli.model_commands import convert, export, prepare_pretraining_command, presets, pretrain
from kerasbert.cli.serve_command import serve
from kerasbert.cli.task_commands import evaluate, fit, predict
from kerasbert.doors import entered_through

DEBUG_ENV = "KERASBERT_DEBUG"


def one_line(error):
    """An exception as the one line the user sees: its message with line breaks folded.

    Example:
    >>> one_line(ValueError("No column 'text'.\\nColumns: review, stars."))
    "No column 'text'. Columns: review, stars."
    """
    message = " ".join(part.strip() for part in str(error).splitlines() if part.strip())
    if isinstance(error, KeyError) and len(error.args) == 1:
        message = str(error.args[0])
    return message or type(error).__name__


def show_warning(message, category, filename, lineno, file=None, line=None):
    """A warning as one `Warning:` line on stderr, without the source line Python shows."""
    click.echo(f"Warning: {one_line(message)}", err=True)


class OneLineErrors(click.Group):
    """A click group whose commands end on a bad input with `Error: <what and how to fix it>` and exit
    status 1, not a traceback. `KERASBERT_DEBUG=1` shows the traceback."""

    def invoke(self, ctx):
        try:
            with entered_through("cli"), warnings.catch_warnings():  # fixes proposed as flags: --column text=review
                warnings.showwarning = show_warning
                return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:  # `kerasbert presets | head`: the reader left; stop quietly as Unix tools do
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise click.exceptions.Exit(141) from None
        except Exception as error:  # noqa: BLE001 - every failure of a command becomes one line
            if os.environ.get(DEBUG_ENV):
                raise
            raise click.ClickException(one_line(error)) from error


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kerasbert")
def main():
    """kerasbert: fine-tune, evaluate, serve and convert BERT models from the shell.

    \b
    Example:
        kerasbert fit uci_sentiment --preset all_minilm_l6_v2_en --output sentiment.keras
        kerasbert predict sentiment.keras reviews.csv --output predictions.jsonl
        kerasbert serve sentiment.keras --port 8000

    Set KERASBERT_DEBUG=1 to see a traceback instead of a one-line error.
    """


for command in (fit, evaluate, predict, prepare_pretraining_command, pretrain, convert, export, presets, serve):
    main.add_command(command)

if __name__ == "__main__":
    sys.exit(main())
