"""BigBird's block-sparse self-attention (Zaheer et al., 2020; HF `BigBirdBlockSparseAttention`, ITC).

The sequence is cut into blocks of `block_size` tokens (padded up to a multiple of it). The first and the last
block are global: their queries see every key, and every query sees them. Each other query block `i` sees the
key blocks `i - 1, i, i + 1` (the window), the two global blocks and `num_random_blocks` more: a memory of
`(5 + num_random_blocks) * block_size` keys per query whatever the length. Padded queries output zeros, as HF's.

Random blocks: in inference HF picks none at random (every random slot is block 0, counted once more in the
softmax) and neither does this layer, so their outputs are equal; in training this layer draws, per head and
per step, random blocks outside the window and the global blocks (HF seeds numpy with the layer's index at
every training step: the same blocks at every step).

Short inputs: where `length <= (5 + 2 * num_random_blocks) * block_size` the pattern would cover about every
key, and the layer attends fully (HF `BigBirdModel` switches to `original_full` there too).
"""

import math

import keras
from keras import ops

from kerasbert.layers.attention import FLOAT32_MIN, MultiHeadSelfAttention

ATTENTION_TYPES = ("block_sparse", "original_full")


def check_block_sparse(block_size, num_random_blocks, attention_type):
    """ValueErrors naming the fix for settings HF BigBird cannot have."""
    for name, value, least in (("block_size", block_size, 1), ("num_random_blocks", num_random_blocks, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name}={value!r}: give an int >= {least} (bigbird-roberta-base: block_size=64, "
                             "num_random_blocks=3).")
    if attention_type not in ATTENTION_TYPES:
        raise ValueError(f"attention_type={attention_type!r}: use 'block_sparse' or 'original_full' (HF BigBird's).")


def window_blocks(num_blocks, num_random_blocks):
    """`(index [num_blocks - 2, 5 + r], valid [num_blocks - 2, 5 + r])`: the key blocks of query blocks 1 to
    `num_blocks - 2` (block 0, the window `i - 1, i, i + 1`, the last block, then `r` random slots holding 0),
    and whether each slot counts (block 1's `i - 1` is block 0 again, block `-2`'s last block is its `i + 1`).

    Examples:
        >>> index, valid = window_blocks(6, 1)  # index[0] = [0, 0, 1, 2, 5, 0], valid[0] = [T, F, T, T, T, T]
    """
    rows = ops.arange(1, num_blocks - 1)[:, None]
    last = ops.zeros_like(rows) + (num_blocks - 1)
    index = ops.concatenate([ops.zeros_like(rows), rows - 1, rows, rows + 1, last]
                            + [ops.zeros_like(rows)] * num_random_blocks, axis=1)
    first_row, last_row = ops.equal(rows, 1), ops.equal(rows, num_blocks - 2)
    always = ops.ones_like(rows, "bool")
    valid = ops.concatenate([always, ops.logical_not(first_row), always, always, ops.logical_not(last_row)]
                            + [always] * num_random_blocks, axis=1)
    return index, valid


def random_blocks(num_blocks, num_heads, num_random_blocks, seed):
    """`[num_heads, num_blocks - 2, r]` random key blocks of query blocks 1 to `num_blocks - 2`, distinct within a
    row and outside its window and the global blocks (`num_blocks` must exceed `5 + r`)."""
    rows = ops.arange(1, num_blocks - 1)[:, None]
    keys = ops.arange(num_blocks)[None, :]
    allowed = ops.logical_and(ops.logical_and(keys > 0, keys < num_blocks - 1), ops.abs(keys - rows) > 1)
    scores = keras.random.uniform((num_heads, num_blocks - 2, num_blocks), seed=seed)
    _, picked = ops.top_k(ops.where(allowed[None], scores, -1.0), k=num_random_blocks)
    return ops.cast(picked, "int32")


@keras.saving.register_keras_serializable(package="kerasbert")
class BlockSparseSelfAttention(MultiHeadSelfAttention):
    """`MultiHeadSelfAttention` as HF BigBird computes it (see the module docstring): the same weights (HF
    `query`, `key`, `value` fused in `qkv_dense`; `attention.output.dense`), another pattern of keys.

    Args:
        num_heads, attention_dropout, initializer_range, lora_config: as `MultiHeadSelfAttention`.
        block_size, num_random_blocks: HF `block_size`, `num_random_blocks`.
        attention_type: "block_sparse", or "original_full" (BERT's full attention: HF `attention_type`).
        seed: the seed of the random blocks drawn in training.

    Call args:
        x: `[B, T, hidden]`. padding_mask: `[B, T]`, true on real tokens. training: draw random blocks.

    Examples:
        >>> attention = BlockSparseSelfAttention(num_heads=2, block_size=2, num_random_blocks=1)
        >>> tuple(attention(ops.ones((1, 20, 8))).shape)
        (1, 20, 8)
    """

    def __init__(self, num_heads, attention_dropout=0.1, initializer_range=0.02, lora_config=None, block_size=64,
                 num_random_blocks=3, attention_type="block_sparse", seed=None, **kwargs):
        super().__init__(num_heads, attention_dropout, initializer_range, lora_config, fused_attention=False,
                         **kwargs)
        check_block_sparse(block_size, num_random_blocks, attention_type)
        self.block_size = block_size
        self.num_random_blocks = num_random_blocks
        self.attention_type = attention_type
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    @property
    def full_attention_length(self):
        """The longest input attended fully: `(5 + 2 * num_random_blocks) * block_size` (HF's bound)."""
        return (5 + 2 * self.num_random_blocks) * self.block_size

    def call(self, x, padding_mask=None, attention_mask=None, return_attention_scores=False, training=None):
        if self.attention_type == "original_full":
            return super().call(x, padding_mask, attention_mask, return_attention_scores, training)
        if attention_mask is not None or return_attention_scores:
            raise ValueError("Block-sparse attention takes no [T, T] attention_mask and returns no [T, T] "
                             "probabilities: use attention_type='original_full' for them.")
        length = x.shape[1]
        if padding_mask is None:
            padding_mask = ops.ones(ops.shape(x)[:2], "bool")
        if isinstance(length, int):  # a static length: decide here (JAX, torch, TensorFlow eager)
            if length <= self.full_attention_length:
                return super().call(x, padding_mask, training=training)
            return self.block_sparse(x, padding_mask, training)
        return ops.cond(ops.shape(x)[1] <= self.full_attention_length,
                        lambda: super(BlockSparseSelfAttention, self).call(x, padding_mask, training=training),
                        lambda: self.block_sparse(x, padding_mask, training))

    def block_sparse(self, x, padding_mask, training):
        """The block-sparse output `[B, T, hidden]` of an input longer than `full_attention_length`."""
        length, size, count = ops.shape(x)[1], self.block_size, self.num_random_blocks
        padded_length = (length + size - 1) // size * size
        extra = padded_length - length
        x = ops.pad(x, ((0, 0), (0, extra), (0, 0)))
        mask = ops.pad(ops.cast(padding_mask, "bool"), ((0, 0), (0, extra)))
        query, key, value = self.project_heads(x, training)  # [B, H, Tp, d]
        batch, num_blocks = ops.shape(x)[0], padded_length // size

        index, valid = window_blocks(num_blocks, count)  # [rows, slots]
        index = ops.broadcast_to(index[None], (self.num_heads, num_blocks - 2, 5 + count))
        if training and count:
            picked = random_blocks(num_blocks, self.num_heads, count, self.seed_generator)
            index = ops.concatenate([index[:, :, :5], picked], axis=2)
        slots = 5 + count

        def gather(tensor):  # [B, H, Tp, d] -> [B, H, rows, slots * size, d], the key blocks of each row
            blocks = ops.reshape(tensor, (batch, self.num_heads * num_blocks, size, self.head_dim))
            heads = ops.arange(self.num_heads)[:, None, None] * num_blocks
            taken = ops.take(blocks, ops.reshape(index + heads, (-1,)), axis=1)
            return ops.reshape(taken, (batch, self.num_heads, num_blocks - 2, slots * size, self.head_dim))

        key_mask = ops.take(ops.reshape(mask, (batch, num_blocks, size)), ops.reshape(index, (-1,)), axis=1)
        key_mask = ops.reshape(key_mask, (batch, self.num_heads, num_blocks - 2, slots, size))
        key_mask = ops.logical_and(key_mask, valid[None, None, :, :, None])
        key_mask = ops.reshape(key_mask, (batch, self.num_heads, num_blocks - 2, 1, slots * size))

        blocked_query = ops.reshape(query, (batch, self.num_heads, num_blocks, size, self.head_dim))
        middle = self.attend(blocked_query[:, :, 1:-1], gather(key), gather(value), key_mask, training)
        ends = ops.stack([blocked_query[:, :, 0], blocked_query[:, :, -1]], axis=2)  # the global query blocks
        ends = self.attend(ends, key[:, :, None], value[:, :, None], mask[:, None, None, None, :], training)
        context = ops.concatenate([ends[:, :, :1], middle, ends[:, :, 1:]], axis=2)
        context = ops.reshape(context, (batch, self.num_heads, padded_length, self.head_dim))
        context = ops.transpose(context, (0, 2, 1, 3)) * ops.cast(mask, context.dtype)[:, :, None, None]
        return self.project_output(context[:, :length], training)

    def attend(self, query, key, value, key_mask, training):
        """Context `[B, H, n, q, d]` of query blocks `[B, H, n, q, d]` over their keys and values
        `[B, H, n|1, k, d]`, `key_mask` `[B, H|1, n|1, 1, k]` true where a key counts."""
        scores = ops.einsum("bhnqd,bhnkd->bhnqk", query, ops.broadcast_to(key, ops.shape(query)[:3]
                                                                         + ops.shape(key)[3:]))
        scores = ops.where(key_mask, ops.cast(scores, "float32") / math.sqrt(self.head_dim), FLOAT32_MIN)
        probabilities = self.dropout_layer(ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype),
                                           training=training)
        return ops.einsum("bhnqk,bhnkd->bhnqd", probabilities,
                          ops.broadcast_to(value, ops.shape(query)[:3] + ops.shape(value)[3:]))

    def get_config(self):
        config = super().get_config()
        config.pop("fused_attention")
        config.update({"block_size": self.block_size, "num_random_blocks": self.num_random_blocks,
                       "attention_type": self.attention_type, "seed": self.seed})
        return config
