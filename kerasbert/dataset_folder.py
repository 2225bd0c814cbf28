"""Where the data sets shipped with the repository live, and their names; no TensorFlow, so that the command
line can name a wrong data set at once (`kerasbert.data.load_dataset` reads them).

Examples:
    >>> available_datasets()
    ['brown_pos', 'jane_austen', 'spam_assassin', 'uci_sentiment']
"""

import os
from pathlib import Path

DATASETS_ENV = "KERASBERT_DATASETS"


def datasets_dir():
    """The shipped data folder: `$KERASBERT_DATASETS` if set, else `<repo>/datasets`."""
    override = os.environ.get(DATASETS_ENV)
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[1] / "datasets"  # kerasbert/dataset_folder.py -> <repo>


def available_datasets():
    """Names of the shipped data sets (folders of `datasets_dir()` with a `manifest.json`)."""
    root = datasets_dir()
    if not root.is_dir():
        raise FileNotFoundError(
            f"No shipped data folder at {root}. The data sets ship with the kerasbert repository, "
            f"not the wheel: use a source checkout, or set {DATASETS_ENV} to its `datasets` folder.")
    return sorted(p.parent.name for p in root.glob("*/manifest.json"))
