"""Sliding-window attention computed in blocks, so that its memory grows linearly with the sequence length.

Query i sees key j when `|i - j| <= half_window` (ModernBERT's local layers: `half_window = local_attention // 2`).
The queries are cut into blocks of `half_window`; block k can only see the keys of blocks k - 1, k and k + 1, so
its scores are `[half_window, 3 * half_window]` instead of a row of the full `[T, T]` matrix, the positions
outside the window (and padding) masked as the full path masks them. Outputs equal the full path's with
`sliding_window_mask` (1e-6 in float32) at every query that sees a real key.

Longformer's global tokens come in as extra key/value columns that every query sees besides its window
(`global_keys`, `global_values`, `global_visible`): their scores join each block's in one softmax.
"""

import math

from keras import ops

from kerasbert.layers.attention import FLOAT32_MIN


def neighbour_blocks(x, block):
    """`[B, heads, T', d]` (T' a multiple of `block`) -> `[B, heads, T' / block, 3 * block, d]`: each block's
    previous, own and next block of positions (zeros beyond either end)."""
    batch, heads, depth = ops.shape(x)[0], ops.shape(x)[1], ops.shape(x)[3]
    blocks = ops.reshape(ops.pad(x, ((0, 0), (0, 0), (block, block), (0, 0))), (batch, heads, -1, block, depth))
    return ops.concatenate([blocks[:, :, :-2], blocks[:, :, 1:-1], blocks[:, :, 2:]], axis=3)


def banded_attention(query, key, value, half_window, padding_mask=None, dropout=None, global_keys=None,
                     global_values=None, global_visible=None):
    """Context `[B, T, heads, d]` of `[B, heads, T, d]` queries, keys and values under a sliding window of
    `half_window` positions either side, with float32 scores and softmax (`dropout`: an optional callable on
    the probabilities, e.g. a Dropout layer in training). `global_keys` and `global_values` `[B, heads, G, d]`:
    G more keys every query sees, where `global_visible` `[B, G]` is true (Longformer's global tokens; leave
    them out of `padding_mask` so that none is counted twice).

    Examples:
        >>> context = banded_attention(q, k, v, half_window=64, padding_mask=padding_mask)  # T of 8,192
        >>> context = banded_attention(q, k, v, 2, local_mask, global_keys=gk, global_values=gv, global_visible=g)
    """
    length, depth = ops.shape(query)[2], ops.shape(query)[3]
    num_blocks = (length + half_window - 1) // half_window
    extra = num_blocks * half_window - length  # so written, JAX's symbolic shapes see a multiple of the block
    padded = [ops.pad(part, ((0, 0), (0, 0), (0, extra), (0, 0))) for part in (query, key, value)]
    batch, heads = ops.shape(query)[0], ops.shape(query)[1]
    queries = ops.reshape(padded[0], (batch, heads, num_blocks, half_window, depth))
    keys, values = neighbour_blocks(padded[1], half_window), neighbour_blocks(padded[2], half_window)
    scores = ops.cast(ops.einsum("bhnqd,bhnkd->bhnqk", queries, keys), "float32") / math.sqrt(depth)

    # key slot s of a block sits s - half_window after the block's start; query slot q at q
    offsets = ops.arange(3 * half_window)[None, :] - half_window - ops.arange(half_window)[:, None]
    visible = ops.abs(offsets) <= half_window  # [q, s]
    real = ops.ones((batch, length), "bool") if padding_mask is None else ops.cast(padding_mask, "bool")
    real = ops.pad(real, ((0, 0), (0, extra)), constant_values=False)
    real = neighbour_blocks(ops.cast(real, "int32")[:, None, :, None], half_window)[:, 0, :, :, 0]  # [B, n, 3w]
    mask = ops.logical_and(visible[None, None, None], ops.cast(real, "bool")[:, None, :, None, :])
    scores = ops.where(mask, scores, FLOAT32_MIN)
    if global_keys is not None:
        global_scores = ops.cast(ops.einsum("bhnqd,bhgd->bhnqg", queries, global_keys), "float32") / math.sqrt(depth)
        global_visible = ops.cast(global_visible, "bool")[:, None, None, None, :]
        scores = ops.concatenate([ops.where(global_visible, global_scores, FLOAT32_MIN), scores], axis=-1)
    probabilities = ops.softmax(scores, axis=-1)
    if dropout is not None:
        probabilities = dropout(probabilities)
    probabilities = ops.cast(probabilities, value.dtype)
    if global_keys is not None:
        count = ops.shape(global_keys)[2]
        context = ops.einsum("bhnqk,bhnkd->bhnqd", probabilities[..., count:], values)
        context = context + ops.einsum("bhnqg,bhgd->bhnqd", probabilities[..., :count], global_values)
    else:
        context = ops.einsum("bhnqk,bhnkd->bhnqd", probabilities, values)
    context = ops.reshape(context, (batch, heads, -1, depth))[:, :, :length]
    return ops.transpose(context, (0, 2, 1, 3))
