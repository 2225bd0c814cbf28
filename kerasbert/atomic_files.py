"""Writes that a kill cannot leave half-done under the final name: write beside it, then rename.

`os.replace` within one folder is atomic on POSIX and Windows: the final name holds either the old
complete file or the new complete file, never a torn one. (No TensorFlow here: the command line uses it.)

Examples:
    >>> with atomic_path("model.keras") as temporary:
    ...     model.save(temporary)            # model.keras appears only once the save has finished
"""

import contextlib
import os
import shutil
from pathlib import Path


def partial_name(path):
    """The hidden sibling a write goes to first; it keeps the suffixes (Keras checks `.keras`, `.weights.h5`).

    Examples:
        >>> partial_name(Path("out/model.weights.h5")).name  # doctest: +SKIP
        '.model.partial-4242.weights.h5'
    """
    base, dot, suffixes = path.name.partition(".")
    return path.with_name(f".{base}.partial-{os.getpid()}{dot}{suffixes}")


def remove(path):
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path` to write a file or a folder to; on success move it to `path`
    (a folder replaces the old folder whole), on failure delete it and leave `path` as it was."""
    path = Path(path)
    temporary = partial_name(path)
    remove(temporary)
    try:
        yield temporary
        if temporary.is_dir() and path.exists():
            retired = temporary.with_name(temporary.name + ".old")
            path.rename(retired)
            temporary.rename(path)
            remove(retired)
        else:
            os.replace(temporary, path)
    finally:
        remove(temporary)


def write_bytes_atomically(path, data):
    """`Path(path).write_bytes(data)`, atomically."""
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)


def write_text_atomically(path, text):
    """`Path(path).write_text(text)` in UTF-8, atomically."""
    write_bytes_atomically(path, text.encode("utf-8"))
