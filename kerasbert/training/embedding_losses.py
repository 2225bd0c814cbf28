"""Losses of sentence embeddings, in `keras.ops` (every backend), defined as sentence-transformers defines them.

Each takes the embeddings of one batch (`[batch, dim]` tensors, not yet normalised) and returns a scalar:
- `multiple_negatives_ranking_loss`: in-batch negatives (InfoNCE): each anchor's positive against every positive
  and hard negative of the batch, cosine x `scale`; `symmetric=True` adds each positive's anchor against every
  anchor (sentence-transformers' `directions=("query_to_doc", "doc_to_query")`, `partition_mode="per_direction"`);
- `cosent_loss` and `angle_loss`: scored pairs, every pair ranked above the pairs of lower score (CoSENT, AnglE);
- `contrastive_loss`: labelled pairs, cosine distance pulled to 0 or pushed past `margin`;
- `triplet_loss`: Euclidean distance to the positive `margin` below the distance to the negative;
- `matryoshka_loss`: a loss summed over nested prefixes of the embeddings (each prefix re-normalised).

Examples:
    >>> loss = multiple_negatives_ranking_loss(anchors, positives)            # [batch, dim] each
    >>> loss = matryoshka_loss(cosent_loss, [first, second], (384, 256, 128, 64), scores=scores)
"""

from keras import ops

NEGATIVE_INFINITY = -1e12  # a masked pair's score: exp() of it is 0 in float32


def unit(vectors):
    """Rows divided by their L2 norm (as torch's `F.normalize`: norms below 1e-12 count as 1e-12)."""
    return vectors / ops.maximum(ops.norm(vectors, axis=-1, keepdims=True), 1e-12)


def cosine_matrix(rows, columns):
    """`[len(rows), len(columns)]` cosine similarities."""
    return ops.matmul(unit(rows), ops.transpose(unit(columns)))


def pairwise_cosine(first, second):
    """`[batch]` cosine similarity of each row of `first` with the same row of `second`."""
    return ops.sum(unit(first) * unit(second), axis=-1)


def pairwise_angle(first, second):
    """`[batch]` AnglE similarity: |cosine + sine| of the halves of the normalised rows (odd widths padded)."""
    if first.shape[-1] % 2:
        first, second = (ops.pad(x, [[0, 0], [0, 1]]) for x in (first, second))
    first, second = unit(first), unit(second)
    first_a, first_b = ops.split(first, 2, axis=-1)
    second_a, second_b = ops.split(second, 2, axis=-1)
    sines = ops.sum(first_b * second_a - first_a * second_b, axis=-1)
    return ops.abs(ops.sum(first * second, axis=-1) + sines)


def multiple_negatives_ranking_loss(anchors, positives, *negatives, scale=20.0, symmetric=False, per_example=False):
    """Cross-entropy of each anchor's own positive among all positives and hard negatives of the batch
    (each of `negatives` a `[batch, dim]` tensor, row i a negative of anchor i); see the module docstring."""
    return in_batch_ranking_loss(anchors, ops.concatenate([positives, *negatives], axis=0), scale, symmetric,
                                 per_example)


def in_batch_ranking_loss(anchors, documents, scale=20.0, symmetric=False, per_example=False):
    """`multiple_negatives_ranking_loss` with the positives and negatives in one `[texts * batch, dim]` tensor, the
    `batch` positives first (then each text's negatives, in the same order)."""
    scores = cosine_matrix(anchors, documents) * scale
    batch = ops.shape(anchors)[0]
    positive = ops.diagonal(scores[:, :batch])
    log_partition = ops.logsumexp(scores, axis=1)
    if symmetric:
        backward = ops.transpose(scores[:, :batch])
        log_partition = (log_partition + ops.logsumexp(backward, axis=1)) / 2
    return mean_unless(per_example, log_partition - positive)


def mean_unless(per_example, values):
    """`values` (one loss per example) as they are, or their mean."""
    return values if per_example else ops.mean(values)


def ranked_pairs_loss(similarities, scores, scale):
    """log(1 + sum over pairs (i, j) with score_i < score_j of exp(scale * (similarity_i - similarity_j)))."""
    similarities = ops.cast(similarities, "float32") * scale
    differences = similarities[:, None] - similarities[None, :]
    lower = ops.cast(scores, "float32")[:, None] < ops.cast(scores, "float32")[None, :]
    differences = ops.where(lower, differences, NEGATIVE_INFINITY)
    return ops.logsumexp(ops.concatenate([ops.zeros((1,)), ops.reshape(differences, (-1,))]))


def cosent_loss(first, second, scores, scale=20.0):
    """CoSENT: pairs (rows of `first` and `second`) of higher `scores` get higher cosine similarity."""
    return ranked_pairs_loss(pairwise_cosine(first, second), scores, scale)


def angle_loss(first, second, scores, scale=20.0):
    """AnglE: CoSENT on the angle similarity (`pairwise_angle`)."""
    return ranked_pairs_loss(pairwise_angle(first, second), scores, scale)


def contrastive_loss(first, second, labels, margin=0.5, per_example=False):
    """Mean of 0.5 * (label * d^2 + (1 - label) * max(margin - d, 0)^2), d the cosine distance of each pair."""
    distances = 1 - pairwise_cosine(first, second)
    labels = ops.cast(labels, distances.dtype)
    return mean_unless(per_example, 0.5 * (labels * distances**2 + (1 - labels) * ops.relu(margin - distances) ** 2))


def triplet_loss(anchors, positives, negatives, margin=5.0, per_example=False):
    """Mean of max(|a - p| - |a - n| + margin, 0) in Euclidean distance."""
    def distance(first, second):
        return ops.sqrt(ops.sum((first - second) ** 2, axis=-1))

    return mean_unless(per_example, ops.relu(distance(anchors, positives) - distance(anchors, negatives) + margin))


def matryoshka_loss(loss, embeddings, dimensions, weights=None, **loss_arguments):
    """sum_k weights[k] * loss(*each of `embeddings` cut to its first dimensions[k] values and re-normalised,
    **loss_arguments) (e.g. `scores=` for `cosent_loss`, `labels=` for `contrastive_loss`)."""
    weights = [1.0] * len(dimensions) if weights is None else list(weights)
    if len(weights) != len(dimensions):
        raise ValueError(f"{len(weights)} weights for {len(dimensions)} dimensions: give one weight per dimension.")
    width = embeddings[0].shape[-1]
    if any(not 0 < dimension <= width for dimension in dimensions):
        raise ValueError(f"dimensions {list(dimensions)} must lie in 1..{width}, the embeddings' width.")
    total = 0.0
    for dimension, weight in zip(dimensions, weights):
        total = total + weight * loss(*[unit(x[..., :dimension]) for x in embeddings], **loss_arguments)
    return total
