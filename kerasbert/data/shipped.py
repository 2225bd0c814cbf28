"""Load the small real data sets shipped in the repository's `datasets/` folder.

Each set is `datasets/<name>/` with a card (`README.md`), the script that made it (`prepare.py`),
one JSON-lines file per split and `manifest.json`, which gives each file's sha256. The checksum is
verified on every load, so a corrupted or hand-edited file fails loudly instead of training on it.

Examples:
    >>> from kerasbert.data.shipped import load_dataset
    >>> splits = load_dataset("uci_sentiment")          # {"train": DataFrame, "test": DataFrame}
    >>> test = load_dataset("uci_sentiment", split="test")
    >>> test.columns.tolist()
    ['text', 'label', 'source']
"""

import gzip
import hashlib
import json

import pandas as pd

from kerasbert.dataset_folder import DATASETS_ENV, available_datasets, datasets_dir  # noqa: F401 (public here too)


def load_dataset(name, split=None):
    """Load a shipped data set as DataFrames, checking every file's sha256.

    Args:
        name: a name from `available_datasets()`, e.g. "uci_sentiment".
        split: a split name such as "train"; None loads them all.

    Returns:
        The split's DataFrame, or a dict {split: DataFrame} in the card's order when `split` is None.

    Examples:
        >>> load_dataset("jane_austen", "test").book.unique().tolist()
        ['Persuasion']
    """
    names = available_datasets()
    if name not in names:
        raise ValueError(f"Unknown dataset {name!r}. Available: {', '.join(names)}.")
    folder = datasets_dir() / name
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    splits = manifest["splits"]
    if split is None:
        return {s: _read_split(folder, manifest, entry) for s, entry in splits.items()}
    if split not in splits:
        raise ValueError(f"Dataset {name!r} has no split {split!r}. Splits: {', '.join(splits)}.")
    return _read_split(folder, manifest, splits[split])


def _read_split(folder, manifest, entry):
    path = folder / entry["file"]
    regenerate = (f"Restore it with `git checkout -- {path}` or regenerate the set with "
                  f"`{manifest['prepare']}`.")
    if not path.is_file():
        raise FileNotFoundError(f"Shipped data file {path} is missing. {regenerate}")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        raise ValueError(f"Shipped data file {path} is corrupt: sha256 {digest}, expected "
                         f"{entry['sha256']} (from {folder / 'manifest.json'}). {regenerate}")
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    # split on "\n" only: str.splitlines would also break at U+0085 and U+2028 inside the text
    rows = [json.loads(line) for line in data.decode("utf-8").split("\n") if line]
    return pd.DataFrame.from_records(rows)
