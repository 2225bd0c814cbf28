"""Reformer's LSH self-attention (Kitaev et al., 2020; HF `LSHSelfAttention` and `ReformerSelfOutput`)."""

import math

import keras
import numpy as np
from keras import ops

from kerasbert.layers.chunked_attention import (
    by_length,
    check_chunk_length,
    dropout,
    look_adjacent,
    masked_softmax,
    merge_heads,
    sequence_length,
    split_heads,
    to_chunks,
)
from kerasbert.layers.initializers import weight_initializer


def rotation_size(num_buckets):
    """Columns of random rotation per hash round, and the bucket count, of an int or factorised `num_buckets`."""
    factors = [num_buckets] if isinstance(num_buckets, int) else list(num_buckets)
    return sum(factors), math.prod(factors)


def default_num_buckets(length, chunk_length, max_sequence_length):
    """HF's `num_buckets` when the config leaves it None: about `2 * length / chunk_length`, a power of two, split
    into two factors when larger than `2 * max(sqrt(max_sequence_length / chunk_length), chunk_length)`."""
    power = (2 * (length // chunk_length)).bit_length() - 1
    if 2**power > 2 * max(int((max_sequence_length // chunk_length) ** 0.5), chunk_length):
        return [2 ** (power // 2), 2 ** (power - power // 2)]
    return 2**power


def hash_buckets(vectors, rotations, num_buckets):
    """Angular LSH buckets `[batch, heads, hashes, T]` of `vectors` `[batch, heads, T, head_dim]`: each hash round
    rotates by its random matrix and takes the argmax over `[xR, -xR]`; factorised buckets combine one argmax per
    factor (the first factor varies fastest), as HF `_hash_vectors`."""
    rotated = ops.einsum("bhtd,hdnr->bhntr", ops.stop_gradient(vectors), ops.cast(rotations, vectors.dtype))
    factors = [num_buckets] if isinstance(num_buckets, int) else list(num_buckets)
    buckets, start, product = 0, 0, 1
    for factor in factors:
        part = rotated[..., start:start + factor // 2]
        buckets = buckets + product * ops.argmax(ops.concatenate([part, -part], axis=-1), axis=-1)
        start, product = start + factor // 2, product * factor
    return ops.cast(buckets, "int32")


@keras.saving.register_keras_serializable(package="kerasbert")
class LshSelfAttention(keras.layers.Layer):
    """LSH self-attention as HF Reformer computes it (encoder: no causal mask).

    One shared query-key projection and a value projection (no biases) into `num_heads` heads of `head_dim`. Each
    of `num_hashes` rounds hashes the query-keys into `num_buckets` buckets by a random rotation (an int, or a list
    of factors whose product is the bucket count); padded tokens go to an extra bucket of their own. The tokens
    are sorted by (round, bucket, position), cut into chunks of `chunk_length`, and each chunk's queries attend to
    the keys (length-normalised query-keys over `sqrt(head_dim)`) of that chunk and of `num_chunks_before` /
    `num_chunks_after` neighbour chunks, circularly. A token never sees itself unless it sees nothing else (its own
    score is -1e5, a padded key's -1e9, as HF). The rounds' outputs, sorted back, are combined with weights
    `softmax` over rounds of each round's log-sum-exp. A sequence no longer than one chunk attends fully (no
    hashing), as HF. The heads are merged and projected back to the input width without bias.

    The rotations: `rotations` (an array `[heads, head_dim, num_hashes, sum(factors) // 2]`) when given, the same at
    every call; else drawn at every call from a normal distribution, with `hash_seed` the same draw at every call
    (HF's `hash_seed` also fixes them, but draws them with torch's generator, so the numbers differ), without it a
    fresh draw each call (HF without `hash_seed`). HF parity: set `rotations` to HF's draw
    (`torch.manual_seed(hash_seed); torch.randn(shape)`, which HF redraws identically in every LSH layer).

    Args:
        num_heads, head_dim: heads and their width (HF `num_attention_heads`, `attention_head_size`).
        chunk_length: HF `lsh_attn_chunk_length`; a longer sequence must be a multiple of it.
        num_hashes, num_buckets: hash rounds and buckets (even numbers; a list factorises the hash); None buckets:
            HF's rule from the sequence length (`default_num_buckets`), which needs a known length.
        num_chunks_before, num_chunks_after: HF `lsh_num_chunks_before` / `_after`.
        hash_seed, rotations: see above. max_sequence_length: HF `max_position_embeddings` (for None buckets).
        attention_dropout: dropout on the attention weights (HF `lsh_attention_probs_dropout_prob`).
        initializer_range: stddev of the projections' initialiser.

    Examples:
        >>> attention = LshSelfAttention(num_heads=2, head_dim=4, chunk_length=4, num_hashes=2, num_buckets=4,
        ...                              hash_seed=0)
        >>> tuple(attention(ops.ones((1, 16, 6)), ops.ones((1, 16), "bool")).shape)
        (1, 16, 6)
    """

    def __init__(self, num_heads, head_dim, chunk_length, num_hashes=1, num_buckets=None, num_chunks_before=1,
                 num_chunks_after=0, hash_seed=None, rotations=None, max_sequence_length=4096,
                 attention_dropout=0.0, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        factors = [] if num_buckets is None else [num_buckets] if isinstance(num_buckets, int) else list(num_buckets)
        if num_buckets is not None and (not factors or any(not isinstance(f, int) or f < 2 or f % 2 for f in factors)):
            raise ValueError(f"num_buckets={num_buckets!r}: use an even int, a list of even ints (a factorised hash), "
                             "or None (HF's choice from the sequence length).")
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.chunk_length = chunk_length
        self.num_hashes = num_hashes
        self.num_buckets = num_buckets if num_buckets is None or isinstance(num_buckets, int) else list(num_buckets)
        self.num_chunks_before = num_chunks_before
        self.num_chunks_after = num_chunks_after
        self.hash_seed = hash_seed
        self.rotations = None if rotations is None else np.asarray(rotations, "float32")
        self.max_sequence_length = max_sequence_length
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        self.seed_generator = keras.random.SeedGenerator()
        self.rotation_seed_generator = keras.random.SeedGenerator()
        dense = dict(use_bias=False, kernel_initializer=weight_initializer(initializer_range), dtype=self.dtype_policy)
        self.query_key_dense = keras.layers.Dense(num_heads * head_dim, name="query_key", **dense)
        self.value_dense = keras.layers.Dense(num_heads * head_dim, name="value", **dense)
        self.output_dense = None  # built with the input width

    def build(self, x_shape, padding_mask_shape=None):
        self.query_key_dense.build(x_shape)
        self.value_dense.build(x_shape)
        self.output_dense = keras.layers.Dense(x_shape[-1], use_bias=False, name="output",
                                               kernel_initializer=weight_initializer(self.initializer_range),
                                               dtype=self.dtype_policy)
        self.output_dense.build((*x_shape[:-1], self.num_heads * self.head_dim))

    def buckets_for(self, length):
        """The bucket setting used on a sequence of `length` (HF's rule where `num_buckets` is None)."""
        if self.num_buckets is not None:
            return self.num_buckets
        if not isinstance(length, int):
            raise ValueError(f"{self.name}: num_buckets=None picks the bucket count from the sequence length, which "
                             "is not known here (a traced function); set num_buckets (HF saves its choice).")
        return default_num_buckets(length, self.chunk_length, self.max_sequence_length)

    def draw_rotations(self, num_buckets):
        """This call's random rotations (see the class docstring)."""
        if self.rotations is not None:
            return ops.convert_to_tensor(self.rotations)
        shape = (self.num_heads, self.head_dim, self.num_hashes, rotation_size(num_buckets)[0] // 2)
        seed = self.hash_seed if self.hash_seed is not None else self.rotation_seed_generator
        return keras.random.normal(shape, seed=seed)

    def call(self, x, padding_mask, training=False):
        """`x` `[batch, T, hidden]`, `padding_mask` `[batch, T]` (true on real tokens) -> `[batch, T, hidden]`."""
        length = sequence_length(x)
        check_chunk_length(length, self.chunk_length, self.name)
        query_key = split_heads(self.query_key_dense(x), self.num_heads, self.head_dim)
        value = split_heads(self.value_dense(x), self.num_heads, self.head_dim)
        mask = ops.cast(padding_mask, "bool")

        def plain():
            positions = ops.arange(ops.shape(x)[1])
            is_self = positions[:, None] == positions[None, :]
            key = self.normalize_keys(query_key)
            probabilities, _ = masked_softmax(ops.matmul(query_key, ops.swapaxes(key, -1, -2)),
                                              mask[:, None, None, :], is_self)
            return ops.matmul(dropout(self, probabilities, training), value)

        def chunked():
            return self.hashed_attention(query_key, value, mask, length, training)

        return self.output_dense(merge_heads(by_length(length, self.chunk_length, plain, chunked)))

    def normalize_keys(self, query_key):
        """HF's keys: each query-key divided by its root mean square (epsilon 1e-6), then by `sqrt(head_dim)`."""
        variance = ops.mean(ops.square(query_key), axis=-1, keepdims=True)
        return query_key * ops.rsqrt(variance + 1e-6) / math.sqrt(self.head_dim)

    def hashed_attention(self, query_key, value, mask, length, training):
        """Attention within the chunks of the bucket-sorted sequence, `num_hashes` rounds combined."""
        num_buckets = self.buckets_for(length)
        heads, steps = self.num_heads, ops.shape(query_key)[2]
        buckets = hash_buckets(query_key, self.draw_rotations(num_buckets), num_buckets)  # [b, h, n, T]
        total = rotation_size(num_buckets)[1] + 1  # the extra bucket of padded tokens
        buckets = ops.where(mask[:, None, None, :], buckets, total - 1)
        buckets = buckets + ops.arange(self.num_hashes, dtype="int32")[:, None] * total
        buckets = ops.reshape(buckets, (ops.shape(buckets)[0], heads, -1))  # [b, h, n * T]
        # A stable sort by bucket: every key distinct, so any sort gives HF's `_stable_argsort` order.
        positions = ops.arange(self.num_hashes * steps, dtype="int32")
        sorted_index = ops.argsort(buckets * (self.num_hashes * steps) + positions, axis=-1)
        undo_index = ops.argsort(sorted_index, axis=-1)
        token_index = sorted_index % steps  # [b, h, n * T]: the position of each sorted entry

        def gather(t):
            return ops.take_along_axis(t, token_index[..., None], axis=2)

        query = to_chunks(gather(query_key), self.chunk_length)
        near_key, near_value = (look_adjacent(to_chunks(gather(t), self.chunk_length), self.num_chunks_before,
                                              self.num_chunks_after) for t in (self.normalize_keys(query_key), value))
        query_position = to_chunks(token_index, self.chunk_length)
        key_position = look_adjacent(query_position, self.num_chunks_before, self.num_chunks_after)
        batch = ops.shape(buckets)[0]
        key_mask = ops.take_along_axis(ops.broadcast_to(mask[:, None, :], (batch, heads, steps)),
                                       ops.reshape(key_position, (batch, heads, -1)), axis=2)
        key_mask = ops.reshape(key_mask, ops.shape(key_position))[..., None, :]
        dots = ops.matmul(query, ops.swapaxes(near_key, -1, -2))
        probabilities, logits = masked_softmax(dots, key_mask, query_position[..., None] == key_position[..., None, :])
        out = ops.matmul(dropout(self, probabilities, training), near_value)
        out = ops.take_along_axis(ops.reshape(out, (batch, heads, -1, self.head_dim)), undo_index[..., None], axis=2)
        logits = ops.take_along_axis(ops.reshape(logits, ops.shape(buckets)), undo_index, axis=2)
        if self.num_hashes == 1:
            return out
        out = ops.reshape(out, (batch, heads, self.num_hashes, steps, self.head_dim))
        logits = ops.reshape(logits, (batch, heads, self.num_hashes, steps, 1))
        weights = ops.exp(logits - ops.logsumexp(logits, axis=2, keepdims=True))
        return ops.sum(out * weights, axis=2)

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "head_dim": self.head_dim,
                "chunk_length": self.chunk_length, "num_hashes": self.num_hashes, "num_buckets": self.num_buckets,
                "num_chunks_before": self.num_chunks_before, "num_chunks_after": self.num_chunks_after,
                "hash_seed": self.hash_seed,
                "rotations": None if self.rotations is None else self.rotations.tolist(),
                "max_sequence_length": self.max_sequence_length, "attention_dropout": self.attention_dropout,
                "initializer_range": self.initializer_range}
