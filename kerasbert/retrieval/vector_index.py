"""VectorIndex: what every index of vectors shares (ids, input checks, the saved folder); `load_index` reads any."""

import json
from pathlib import Path

import numpy as np

from kerasbert.arguments import check_count
from kerasbert.atomic_files import atomic_path

METRICS = ("cosine", "dot")
INDEX_FILE, IDS_FILE = "index.json", "ids.json"
FORMAT = 1  # index.json's "format": raised when the folder's layout changes
INDEX_KINDS = {}  # kind -> class, filled by `register_index`


def register_index(cls):
    INDEX_KINDS[cls.kind] = cls
    return cls


class VectorIndex:
    """Vectors under unique ids (str or int, default their positions), searched for each query's best `top_k`.
    Subclasses store and find (`store`, `find`) and write and read their own files (`write`, `restored`).

    Args:
        dimension: the vectors' width. metric: "cosine" or "dot" (the raw inner product).
    """

    kind = None

    def __init__(self, dimension, metric="cosine"):
        check_count("dimension", dimension)
        if metric not in METRICS:
            raise ValueError(f"metric={metric!r} is not one of {list(METRICS)}.")
        self.dimension = dimension
        self.metric = metric
        self.ids = []

    def __len__(self):
        return len(self.ids)

    def add(self, vectors, ids=None):
        """Add `vectors` (`[n, dimension]`) under `ids`; returns the index."""
        vectors = self.checked(vectors, "vectors")
        ids = self.new_ids(ids, len(vectors))
        self.store(vectors)
        self.ids += ids
        return self

    def search(self, queries, top_k=10):
        """`(scores, ids)`, each `[queries, min(top_k, len(index))]`, every query's best first."""
        check_count("top_k", top_k)
        queries = self.checked(queries, "queries")
        if not len(self):
            raise ValueError("The index is empty: add vectors before searching.")
        scores, positions = self.find(queries, min(top_k, len(self)))
        return scores, np.asarray(self.ids, dtype=object)[positions]

    def save(self, folder):
        """Write the folder `folder` (`index.json`, `ids.json` and the kind's files); a folder there is replaced
        whole, and a kill mid-save leaves it as it was."""
        with atomic_path(folder) as temporary:
            temporary.mkdir()
            self.write(temporary)
            (temporary / IDS_FILE).write_text(json.dumps(self.ids))
            (temporary / INDEX_FILE).write_text(json.dumps({"format": FORMAT, "kind": self.kind, "count": len(self),
                                                            **self.settings()}))
        return Path(folder)

    def settings(self):
        return {"dimension": self.dimension, "metric": self.metric}

    def checked(self, vectors, name):
        array = np.asarray(vectors)
        if array.ndim != 2 or array.shape[1] != self.dimension or array.dtype.kind not in "fiu":
            raise ValueError(f"{name} must be numbers of shape [n, {self.dimension}]; got "
                             f"{array.dtype} of shape {array.shape}.")
        if not np.isfinite(array).all():
            raise ValueError(f"{name} hold NaN or infinite values (row {int(np.argwhere(~np.isfinite(array))[0, 0])}).")
        return array.astype(np.float32)

    def new_ids(self, ids, count):
        ids = list(range(len(self), len(self) + count)) if ids is None else list(ids)
        if len(ids) != count:
            raise ValueError(f"{len(ids)} ids for {count} vectors: give one id per vector.")
        if not all(isinstance(i, (str, int, np.integer)) and not isinstance(i, bool) for i in ids):
            raise TypeError("ids must be strings or ints, e.g. the passages' ids in the qrels.")
        ids = [i if isinstance(i, str) else int(i) for i in ids]
        seen = set(self.ids)
        for i in ids:
            if i in seen:
                raise ValueError(f"ids must be unique; {i!r} is given twice.")
            seen.add(i)
        return ids


def load_index(folder, **options):
    """The index `save` wrote in `folder` (exact or approximate, as its `index.json` says), or an error naming
    what is missing or damaged. `options` go to the kind's loader (e.g. `view=True` for an approximate index)."""
    folder = Path(folder)
    try:
        settings = json.loads((folder / INDEX_FILE).read_text())
        ids = json.loads((folder / IDS_FILE).read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"{folder} is not a saved index ({error}); write one with index.save(folder).") from None
    if settings.get("kind") not in INDEX_KINDS:
        raise ValueError(f"{folder} holds an index of kind {settings.get('kind')!r}; kerasbert reads "
                         f"{sorted(INDEX_KINDS)}.")
    try:
        index = INDEX_KINDS[settings["kind"]].restored(folder, settings, **options)
    except OSError as error:
        raise ValueError(f"{folder} is missing a file of its index ({error}); save the index again.") from None
    index.ids = ids
    if index.stored_count() != len(ids) or settings.get("count") != len(ids):
        raise ValueError(f"{folder} holds a damaged index: {len(ids)} ids for {index.stored_count()} vectors. "
                         "Save the index again.")
    return index
