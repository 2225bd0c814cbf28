"""What Reformer's two attentions (`LshSelfAttention`, `ChunkedLocalSelfAttention`) share: heads, chunks of the
sequence that also see their neighbour chunks, the softmax with HF's mask values, and the choice between the
chunked and the plain computation by sequence length.

Examples:
    >>> tuple(look_adjacent(ops.ones((1, 2, 3, 4, 8)), 1, 0).shape)
    (1, 2, 3, 8, 8)
"""

import keras
from keras import ops

MASK_VALUE = -1e9  # HF Reformer's float32 value of a masked (padding) key
SELF_MASK_VALUE = -1e5  # HF's float32 value of a query's own key in LSH attention (shared query-key)


def split_heads(x, num_heads, head_dim):
    """`[batch, T, heads * head_dim]` -> `[batch, heads, T, head_dim]`."""
    return ops.transpose(ops.reshape(x, (ops.shape(x)[0], -1, num_heads, head_dim)), (0, 2, 1, 3))


def merge_heads(x):
    """`[batch, heads, T, head_dim]` -> `[batch, T, heads * head_dim]`."""
    batch, num_heads, _, head_dim = x.shape
    return ops.reshape(ops.transpose(x, (0, 2, 1, 3)), (ops.shape(x)[0], -1, num_heads * head_dim))


def to_chunks(x, chunk_length):
    """Split axis 2 (the sequence, or hash rounds times the sequence) of a `[batch, heads, T, ...]` tensor into
    `[batch, heads, T // chunk_length, chunk_length, ...]`."""
    shape = ops.shape(x)
    return ops.reshape(x, (shape[0], x.shape[1], -1, chunk_length, *x.shape[3:]))


def look_adjacent(chunks, before, after):
    """Each chunk followed by its `before` previous and `after` next chunks along the chunk axis 2, circularly (the
    first chunk's previous one is the last, as HF's `_look_adjacent`), concatenated along axis 3."""
    if before == 0 and after == 0:
        return chunks
    return ops.concatenate([chunks if i == 0 else ops.roll(chunks, -i, axis=2) for i in range(-before, after + 1)],
                           axis=3)


def masked_softmax(dots, key_mask, self_mask=None):
    """HF Reformer's attention weights: scores of masked keys set to `MASK_VALUE`, then (LSH) a query's own key set
    to `SELF_MASK_VALUE` whatever its mask, then the softmax as `exp(dots - logsumexp)`. Returns `(probabilities,
    logsumexp)`; the log-sum-exp weighs LSH's hash rounds against each other."""
    dots = ops.where(key_mask, dots, ops.cast(MASK_VALUE, dots.dtype))
    if self_mask is not None:
        dots = ops.where(self_mask, ops.cast(SELF_MASK_VALUE, dots.dtype), dots)
    logits = ops.logsumexp(dots, axis=-1, keepdims=True)
    return ops.exp(dots - logits), logits


def by_length(length, chunk_length, plain, chunked):
    """`plain()` when the sequence fits one chunk (HF's `do_standard_self_attention`), else `chunked()`; a length
    only known when the graph runs (a traced function) chooses with `ops.cond`."""
    if isinstance(length, int):
        return plain() if length <= chunk_length else chunked()
    return ops.cond(length <= chunk_length, plain, chunked)


def sequence_length(x):
    """Axis 1 of `x`: a Python int where the shape is known, else a scalar tensor."""
    return x.shape[1] if isinstance(x.shape[1], int) else ops.shape(x)[1]


def check_chunk_length(length, chunk_length, layer):
    """A ValueError naming the fix when a known sequence length longer than one chunk is no multiple of it."""
    if isinstance(length, int) and length > chunk_length and length % chunk_length:
        raise ValueError(f"{layer}: sequence length {length} is longer than one chunk but not a multiple of "
                         f"chunk_length={chunk_length}; pad it to {length + chunk_length - length % chunk_length} "
                         "(ReformerBackbone pads as HF does).")


def dropout(layer, probabilities, training):
    """`layer.attention_dropout` applied to attention weights by `layer`'s seed generator."""
    if training and layer.attention_dropout > 0:
        return keras.random.dropout(probabilities, layer.attention_dropout, seed=layer.seed_generator)
    return probabilities
