"""ExactIndex: exact nearest-neighbour search over vectors, a batched matrix product and a top-k per query."""

import json
from pathlib import Path

import numpy as np

from kerasbert.arguments import check_count
from kerasbert.atomic_files import atomic_path

METRICS = ("cosine", "dot")
INDEX_FILE, VECTORS_FILE, IDS_FILE = "index.json", "vectors.npy", "ids.json"
FORMAT = 1  # index.json's "format": raised when the folder's layout changes


class ExactIndex:
    """Vectors with ids, searched exactly: scores of a batch of queries against the corpus in chunks of
    `chunk_size` rows (memory stays bounded by `query_batch_size x chunk_size` scores), best first; equal
    scores keep the order the vectors were added in.

    Args:
        dimension: the vectors' width. metric: "cosine" (vectors normalised as they are added and searched)
            or "dot" (the raw inner product).

    Examples:
        >>> index = ExactIndex(384)
        >>> index.add(encoder.encode(passages), ids=["p1", "p2", "p3"])
        >>> scores, ids = index.search(encoder.encode(["Who wrote it?"]), top_k=2)    # [1, 2] each
        >>> index.save("passages_index"); ExactIndex.load("passages_index")
    """

    kind = "exact"

    def __init__(self, dimension, metric="cosine"):
        check_count("dimension", dimension)
        if metric not in METRICS:
            raise ValueError(f"metric={metric!r} is not one of {list(METRICS)}.")
        self.dimension = dimension
        self.metric = metric
        self.vectors = np.zeros((0, dimension), np.float32)
        self.ids = []

    def __len__(self):
        return len(self.ids)

    def add(self, vectors, ids=None):
        """Add `vectors` (`[n, dimension]`) under `ids` (unique str or int; default: their positions)."""
        vectors = self.checked(vectors, "vectors")
        ids = list(range(len(self), len(self) + len(vectors))) if ids is None else list(ids)
        if len(ids) != len(vectors):
            raise ValueError(f"{len(ids)} ids for {len(vectors)} vectors: give one id per vector.")
        if not all(isinstance(i, (str, int, np.integer)) and not isinstance(i, bool) for i in ids):
            raise TypeError("ids must be strings or ints, e.g. the passages' ids in the qrels.")
        ids = [i if isinstance(i, str) else int(i) for i in ids]
        seen = set(self.ids)
        for i in ids:
            if i in seen:
                raise ValueError(f"ids must be unique; {i!r} is given twice.")
            seen.add(i)
        self.vectors = np.concatenate([self.vectors, self.normalised(vectors)])
        self.ids += ids
        return self

    def search(self, queries, top_k=10, query_batch_size=256, chunk_size=65536):
        """`(scores, ids)`, each `[queries, min(top_k, len(index))]`, every query's best first."""
        check_count("top_k", top_k)
        check_count("query_batch_size", query_batch_size)
        check_count("chunk_size", chunk_size)
        queries = self.normalised(self.checked(queries, "queries"))
        if not len(self):
            raise ValueError("The index is empty: add vectors before searching.")
        k = min(top_k, len(self))
        scores, positions = [], []
        for start in range(0, len(queries), query_batch_size):
            found = self.top_k(queries[start:start + query_batch_size], k, chunk_size)
            scores.append(found[0])
            positions.append(found[1])
        positions = np.concatenate(positions)
        return np.concatenate(scores), np.asarray(self.ids, dtype=object)[positions]

    def top_k(self, queries, k, chunk_size):
        best_scores = np.zeros((len(queries), 0), np.float32)
        best_positions = np.zeros((len(queries), 0), np.int64)
        for start in range(0, len(self), chunk_size):
            chunk = self.vectors[start:start + chunk_size]
            scores = np.concatenate([best_scores, queries @ chunk.T], axis=1)
            positions = np.concatenate([best_positions, np.broadcast_to(
                np.arange(start, start + len(chunk)), (len(queries), len(chunk)))], axis=1)
            order = np.argsort(-scores, axis=1, kind="stable")[:, :k]  # ties: earlier positions first
            best_scores = np.take_along_axis(scores, order, axis=1)
            best_positions = np.take_along_axis(positions, order, axis=1)
        return best_scores, best_positions

    def save(self, folder):
        """Write the folder `folder`: `index.json`, `vectors.npy` and `ids.json` (a folder there is replaced whole,
        and a kill mid-save leaves it as it was)."""
        with atomic_path(folder) as temporary:
            temporary.mkdir()
            np.save(temporary / VECTORS_FILE, self.vectors)
            (temporary / IDS_FILE).write_text(json.dumps(self.ids))
            (temporary / INDEX_FILE).write_text(json.dumps({"format": FORMAT, "kind": self.kind, "metric": self.metric,
                                                            "dimension": self.dimension, "count": len(self)}))
        return Path(folder)

    @classmethod
    def load(cls, folder):
        """The index `save` wrote in `folder`, or an error naming what is missing or damaged."""
        folder = Path(folder)
        try:
            settings = json.loads((folder / INDEX_FILE).read_text())
            ids = json.loads((folder / IDS_FILE).read_text())
            vectors = np.load(folder / VECTORS_FILE, allow_pickle=False)
        except (OSError, ValueError) as error:
            raise ValueError(f"{folder} is not a saved index ({error}); write one with ExactIndex.save.") from None
        if settings.get("kind") != cls.kind or vectors.shape != (len(ids), settings.get("dimension")):
            raise ValueError(f"{folder} holds a damaged index: {len(ids)} ids, vectors of shape {vectors.shape}, "
                             f"settings {settings}. Save the index again.")
        index = cls(settings["dimension"], settings["metric"])
        index.vectors, index.ids = vectors.astype(np.float32), ids
        return index

    def checked(self, vectors, name):
        array = np.asarray(vectors)
        if array.ndim != 2 or array.shape[1] != self.dimension or array.dtype.kind not in "fiu":
            raise ValueError(f"{name} must be numbers of shape [n, {self.dimension}]; got "
                             f"{array.dtype} of shape {array.shape}.")
        if not np.isfinite(array).all():
            raise ValueError(f"{name} hold NaN or infinite values (row {int(np.argwhere(~np.isfinite(array))[0, 0])}).")
        return array.astype(np.float32)

    def normalised(self, vectors):
        if self.metric == "dot":
            return vectors
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
