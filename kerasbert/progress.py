"""How much progress a run shows: a bar on a terminal, one plain line per epoch elsewhere (a log file, a pipe:
no carriage returns, backspaces or colour codes), nothing for short inference runs.

Examples:
    >>> progress_verbosity("auto", steps=3)        # a short run: no progress at all
    0
    >>> progress_verbosity("auto", steps=200)      # 1 (Keras' bar) on a terminal, 2 (plain lines) in a log
    2
    >>> progress_verbosity(0, steps=200)           # the caller's choice stands
    0
"""

import sys

QUIET_BATCHES = 10  # verbose="auto": no progress for inference over this many batches or fewer


def on_terminal(stream=None):
    """True where a progress bar can redraw itself: a terminal, or a notebook."""
    stream = stream or sys.stdout
    return "ipykernel" in sys.modules or bool(getattr(stream, "isatty", lambda: False)())


def progress_verbosity(verbose, steps=None):
    """Keras' `verbose` for a run of `steps` batches (None: training, always shown): "auto" is 0 for runs of
    `QUIET_BATCHES` batches or fewer, else 1 (a bar) on a terminal and 2 (a plain line) elsewhere."""
    if verbose != "auto":
        return verbose
    if steps is not None and steps <= QUIET_BATCHES:
        return 0
    return 1 if on_terminal() else 2
