"""ExactIndex: exact nearest-neighbour search over vectors, a batched matrix product and a top-k per query."""

import numpy as np

from kerasbert.arguments import check_count
from kerasbert.retrieval.vector_index import VectorIndex, register_index

VECTORS_FILE = "vectors.npy"


def unit_rows(vectors):
    """Each row divided by its L2 norm (norms below 1e-12 count as 1e-12)."""
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


@register_index
class ExactIndex(VectorIndex):
    """Vectors with ids, searched exactly: scores of a batch of queries against the corpus in chunks of
    `chunk_size` rows (memory stays bounded by `query_batch_size x chunk_size` scores), best first; equal
    scores keep the order the vectors were added in.

    Args:
        dimension: the vectors' width. metric: "cosine" (vectors normalised as they are added and searched)
            or "dot" (the raw inner product). query_batch_size, chunk_size: the blocks of the score matrix.

    Examples:
        >>> index = ExactIndex(384).add(encoder.encode(passages), ids=["p1", "p2", "p3"])
        >>> scores, ids = index.search(encoder.encode(["Who wrote it?"]), top_k=2)    # [1, 2] each
        >>> index.save("passages_index"); load_index("passages_index")
    """

    kind = "exact"

    def __init__(self, dimension, metric="cosine", query_batch_size=256, chunk_size=65536):
        super().__init__(dimension, metric)
        check_count("query_batch_size", query_batch_size)
        check_count("chunk_size", chunk_size)
        self.query_batch_size = query_batch_size
        self.chunk_size = chunk_size
        self.vectors = np.zeros((0, dimension), np.float32)

    def store(self, vectors):
        self.vectors = np.concatenate([self.vectors, self.normalised(vectors)])

    def find(self, queries, k):
        queries = self.normalised(queries)
        found = [self.top_k(queries[start:start + self.query_batch_size], k)
                 for start in range(0, len(queries), self.query_batch_size)]
        return np.concatenate([scores for scores, _ in found]), np.concatenate([positions for _, positions in found])

    def top_k(self, queries, k):
        best_scores = np.zeros((len(queries), 0), np.float32)
        best_positions = np.zeros((len(queries), 0), np.int64)
        for start in range(0, len(self.vectors), self.chunk_size):
            chunk = self.vectors[start:start + self.chunk_size]
            scores = np.concatenate([best_scores, queries @ chunk.T], axis=1)
            positions = np.concatenate([best_positions, np.broadcast_to(
                np.arange(start, start + len(chunk)), (len(queries), len(chunk)))], axis=1)
            order = np.argsort(-scores, axis=1, kind="stable")[:, :k]  # ties: earlier positions first
            best_scores = np.take_along_axis(scores, order, axis=1)
            best_positions = np.take_along_axis(positions, order, axis=1)
        return best_scores, best_positions

    def normalised(self, vectors):
        return vectors if self.metric == "dot" else unit_rows(vectors)

    def write(self, folder):
        np.save(folder / VECTORS_FILE, self.vectors)

    def stored_count(self):
        return len(self.vectors)

    @classmethod
    def restored(cls, folder, settings):
        index = cls(settings["dimension"], settings["metric"])
        vectors = np.load(folder / VECTORS_FILE, allow_pickle=False)
        if vectors.ndim != 2 or vectors.shape[1] != index.dimension:
            raise ValueError(f"{folder / VECTORS_FILE} holds vectors of shape {vectors.shape}, not [n, "
                             f"{index.dimension}]: the index is damaged; save it again.")
        index.vectors = vectors.astype(np.float32)
        return index
