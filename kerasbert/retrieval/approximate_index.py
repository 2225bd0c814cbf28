"""ApproximateIndex: HNSW graph search (USearch) for corpora where an exact scan is too slow or too large."""

import numpy as np

from kerasbert.arguments import check_count
from kerasbert.retrieval.vector_index import VectorIndex, register_index

GRAPH_FILE = "usearch.index"
PRECISIONS = ("f32", "f16", "i8")
USEARCH_METRICS = {"cosine": "cos", "dot": "ip"}


@register_index
class ApproximateIndex(VectorIndex):
    """Vectors in a USearch HNSW graph: each query visits a few hundred vectors instead of all of them, so the
    best `top_k` are found in about logarithmic time, nearly always the exact ones (recall@10 against
    `ExactIndex` measured in `tests/retrieval/test_approximate_index.py`). Vectors can be stored at lower
    precision ("f16", "i8": a half and a quarter of the bytes), and a saved index can be searched from disk
    without reading it into memory (`load_index(folder, view=True)`). Needs the `search` extra (`usearch`).

    Args:
        dimension, metric: as `ExactIndex`. precision: "f32", "f16" or "i8" storage ("i8": cosine only).
        connectivity: graph edges per vector (HNSW's M). expansion_add, expansion_search: candidates kept
            while adding and searching (HNSW's efConstruction and ef): higher is more exact and slower.

    Examples:
        >>> index = ApproximateIndex(384, precision="i8").add(encoder.encode(passages), ids=passage_ids)
        >>> scores, ids = index.search(encoder.encode(["Who wrote it?"]), top_k=10)
        >>> index.save("passages_hnsw"); load_index("passages_hnsw", view=True)
    """

    kind = "approximate"

    def __init__(self, dimension, metric="cosine", precision="f32", connectivity=16, expansion_add=128,
                 expansion_search=64):
        super().__init__(dimension, metric)
        if precision not in PRECISIONS:
            raise ValueError(f"precision={precision!r} is not one of {list(PRECISIONS)}.")
        if precision == "i8" and metric != "cosine":
            raise ValueError("precision='i8' stores each value of a unit vector in [-1, 1] and keeps only cosine "
                             "indexes: use metric='cosine', or precision 'f16' or 'f32' for metric='dot'.")
        for name, value in (("connectivity", connectivity), ("expansion_add", expansion_add),
                            ("expansion_search", expansion_search)):
            check_count(name, value)
        try:
            from usearch.index import Index
        except ImportError:
            raise ImportError("ApproximateIndex needs USearch: pip install 'kerasbert[search]' "
                              "(or use ExactIndex, which needs nothing more).") from None
        self.precision = precision
        self.connectivity = connectivity
        self.expansion_add = expansion_add
        self.expansion_search = expansion_search
        self.graph = Index(ndim=dimension, metric=USEARCH_METRICS[metric], dtype=precision, connectivity=connectivity,
                           expansion_add=expansion_add, expansion_search=expansion_search)

    def store(self, vectors):
        self.graph.add(np.arange(len(self), len(self) + len(vectors)), vectors, threads=1)

    def find(self, queries, k):
        matches = self.graph.search(queries, k, threads=1)
        keys, distances = np.atleast_2d(matches.keys), np.atleast_2d(matches.distances)
        if (np.asarray(matches.counts) < k).any():
            raise RuntimeError(f"The graph returned fewer than top_k={k} vectors for a query: raise expansion_search "
                               f"(now {self.expansion_search}) or use ExactIndex.")
        return (1 - distances).astype(np.float32), keys.astype(np.int64)  # USearch gives 1 - cosine, 1 - dot

    def write(self, folder):
        self.graph.save(str(folder / GRAPH_FILE))

    def stored_count(self):
        return len(self.graph)

    def settings(self):
        return {**super().settings(), "precision": self.precision, "connectivity": self.connectivity,
                "expansion_add": self.expansion_add, "expansion_search": self.expansion_search}

    @classmethod
    def restored(cls, folder, settings, view=False):
        """The saved graph, read into memory, or with `view=True` searched from the file (memory-mapped)."""
        options = {name: settings[name] for name in ("precision", "connectivity", "expansion_add", "expansion_search")}
        path = folder / GRAPH_FILE
        if not path.is_file():
            raise OSError(f"no {GRAPH_FILE}")
        index = cls(settings["dimension"], settings["metric"], **options)
        (index.graph.view if view else index.graph.load)(str(path))
        return index
