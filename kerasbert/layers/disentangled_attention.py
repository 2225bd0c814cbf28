"""DeBERTa's disentangled self-attention: content-to-content scores plus content-to-position (c2p) and
position-to-content (p2c) scores over log-bucketed relative positions (He et al., 2021)."""

import keras
import numpy as np
from keras import ops

from kerasbert.layers.initializers import weight_initializer

POSITION_ATTENTION_TYPES = ("c2p", "p2c")


def relative_position_index(length, position_buckets, max_relative_positions):
    """`[length, length]` int32 rows of the relative-embedding table each (query, key) pair reads: the relative
    position `query - key`, log-bucketed beyond `position_buckets // 2` (HF `make_log_bucket_position`) when
    `position_buckets > 0`, shifted by the table's half size and clipped into it.

    Examples:
        >>> ops.convert_to_numpy(relative_position_index(3, 8, 16))[0].tolist()  # query 0 vs keys 0, 1, 2; 16 rows
        [8, 7, 6]
    """
    positions = ops.arange(length, dtype="float32")
    relative = positions[:, None] - positions[None, :]
    span = position_buckets if position_buckets > 0 else max_relative_positions
    if position_buckets > 0 and max_relative_positions > 0:
        mid = position_buckets // 2
        inside = ops.logical_and(relative < mid, relative > -mid)
        absolute = ops.where(inside, float(mid - 1), ops.abs(relative))
        log_base = np.log(np.float32((max_relative_positions - 1) / mid))
        log_position = ops.ceil(ops.log(absolute / mid) / log_base * (mid - 1)) + mid
        relative = ops.where(absolute <= mid, relative, log_position * ops.sign(relative))
    return ops.clip(ops.cast(relative, "int32") + span, 0, 2 * span - 1)


def check_position_attention(pos_att_type):
    """`pos_att_type` as a list (HF also writes it `"p2c|c2p"`), or a ValueError naming the known types."""
    if pos_att_type is None:
        return []
    if isinstance(pos_att_type, str):
        pos_att_type = [part.strip() for part in pos_att_type.lower().split("|")]
    unknown = [part for part in pos_att_type if part not in POSITION_ATTENTION_TYPES]
    if unknown:
        raise ValueError(f"pos_att_type {unknown} is unknown: use a list of {list(POSITION_ATTENTION_TYPES)} "
                         "(HF DebertaV2Config pos_att_type).")
    return list(pos_att_type)


@keras.saving.register_keras_serializable(package="kerasbert")
class DisentangledSelfAttention(keras.layers.Layer):
    """HF `DisentangledSelfAttention` (DeBERTa-v2/v3) without its output projection: returns the attended
    values `[batch, T, hidden]` (and the attention probabilities with `return_attention_scores`).

    Scores are `q.k`, plus with `relative_attention` `q.pk[r(q, k)]` (`"c2p"` in `pos_att_type`) and
    `k.pq[r(q, k)]` (`"p2c"`), all divided by `sqrt(head_dim * (1 + len(pos_att_type)))`, where `pk`, `pq` project
    the relative embeddings (`rel_embeddings`, `[2 * span, hidden]`) with the key and query projections
    (`share_att_key`) or their own (`pos_key_proj`, `pos_query_proj`). A pair with a padded query or key is
    masked (a padded query then attends uniformly, as in HF). `query_states` (same shape as `inputs`) gives the
    queries their own source, as HF's `query_states` (DeBERTa's enhanced mask decoder): keys and values still
    come from `inputs`.

    Examples:
        >>> attention = DisentangledSelfAttention(4, True, ["p2c", "c2p"], 8, 16, share_att_key=True)
        >>> tuple(attention(ops.ones((2, 5, 32)), ops.ones((16, 32)), ops.ones((2, 5))).shape)
        (2, 5, 32)
    """

    def __init__(self, num_heads, relative_attention=True, pos_att_type=("p2c", "c2p"), position_buckets=256,
                 max_relative_positions=512, share_att_key=True, dropout=0.0, attention_dropout=0.0,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.relative_attention = relative_attention
        self.pos_att_type = check_position_attention(pos_att_type)
        self.position_buckets = position_buckets
        self.max_relative_positions = max_relative_positions
        self.share_att_key = share_att_key
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        self.scale_factor = 1 + len(self.pos_att_type)
        own = relative_attention and not share_att_key
        names = ["query", "key", "value"] + [name for name, kind in (("pos_key", "c2p"), ("pos_query", "p2c"))
                                             if own and kind in self.pos_att_type]
        self.projections = {name: None for name in names}
        self.position_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.probability_dropout = keras.layers.Dropout(attention_dropout, dtype=self.dtype_policy)

    def build(self, inputs_shape, rel_embeddings_shape=None, padding_mask_shape=None):
        hidden_dim = inputs_shape[-1]
        if hidden_dim % self.num_heads:
            raise ValueError(f"The hidden width {hidden_dim} is not a multiple of num_heads={self.num_heads}: "
                             "choose num_heads that divides it.")
        self.head_dim = hidden_dim // self.num_heads
        for name in self.projections:
            dense = keras.layers.Dense(hidden_dim, kernel_initializer=weight_initializer(self.initializer_range),
                                       dtype=self.dtype_policy, name=name)
            dense.build((None, hidden_dim))
            self.projections[name] = dense

    def heads(self, name, x):
        """`x` projected by `name`, split into heads: `[..., T, heads, head_dim]`."""
        projected = self.projections[name](x)
        return ops.reshape(projected, tuple(ops.shape(projected)[:-1]) + (self.num_heads, self.head_dim))

    def position_scores(self, query, key, rel_embeddings, training):
        """The c2p and p2c scores `[batch, heads, T, T]` (before scaling)."""
        rel_embeddings = self.position_dropout(rel_embeddings, training=training)
        shape = ops.shape(query)
        index = relative_position_index(shape[1], self.position_buckets, self.max_relative_positions)
        index = ops.broadcast_to(index, (shape[0], self.num_heads, shape[1], shape[1]))
        scores = 0.0
        if "c2p" in self.pos_att_type:
            position_key = self.heads("key" if self.share_att_key else "pos_key", rel_embeddings)
            all_positions = ops.einsum("bqhd,rhd->bhqr", query, position_key)
            scores = scores + ops.take_along_axis(all_positions, index, axis=-1)
        if "p2c" in self.pos_att_type:
            position_query = self.heads("query" if self.share_att_key else "pos_query", rel_embeddings)
            all_positions = ops.einsum("bkhd,rhd->bhkr", key, position_query)
            by_key = ops.take_along_axis(all_positions, ops.swapaxes(index, -1, -2), axis=-1)
            scores = scores + ops.swapaxes(by_key, -1, -2)
        return scores

    def call(self, inputs, rel_embeddings=None, padding_mask=None, query_states=None, return_attention_scores=False,
             training=None):
        query = self.heads("query", inputs if query_states is None else query_states)
        key, value = (self.heads(name, inputs) for name in ("key", "value"))
        scores = ops.einsum("bqhd,bkhd->bhqk", query, key)
        if self.relative_attention and self.pos_att_type:
            scores = scores + self.position_scores(query, key, rel_embeddings, training)
        scale = np.sqrt(np.float32(self.head_dim * self.scale_factor))
        scores = ops.cast(scores, "float32") / scale
        mask = ops.cast(padding_mask, "bool")
        pairs = ops.logical_and(mask[:, None, :, None], mask[:, None, None, :])
        scores = ops.where(pairs, scores, np.finfo(np.float32).min)
        probabilities = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        attended = ops.einsum("bhqk,bkhd->bqhd", self.probability_dropout(probabilities, training=training), value)
        attended = ops.reshape(attended, tuple(ops.shape(attended)[:2]) + (self.num_heads * self.head_dim,))
        return (attended, probabilities) if return_attention_scores else attended

    def get_config(self):
        return {**super().get_config(), **{name: getattr(self, name) for name in (
            "num_heads", "relative_attention", "pos_att_type", "position_buckets", "max_relative_positions",
            "share_att_key", "dropout", "attention_dropout", "initializer_range")}}
