"""ReformerBackbone: the Reformer encoder (Kitaev et al., 2020) as HF `ReformerModel` computes it."""

import math

import keras
from keras import ops

from kerasbert.families.family_backbone import FamilyBackbone
from kerasbert.layers.axial_position_embedding import AxialPositionEmbedding
from kerasbert.layers.chunked_attention import sequence_length
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.local_self_attention import ChunkedLocalSelfAttention
from kerasbert.layers.lsh_self_attention import LshSelfAttention
from kerasbert.layers.reversible_backward import check_replayable, reversible_stack
from kerasbert.layers.reversible_block import ReversibleBlock

CONFIG_NAMES = (
    "vocabulary_size", "hidden_dim", "num_heads", "head_dim", "intermediate_dim", "attn_layers", "num_hashes",
    "num_buckets", "lsh_chunk_length", "lsh_num_chunks_before", "lsh_num_chunks_after", "local_chunk_length",
    "local_num_chunks_before", "local_num_chunks_after", "hash_seed", "axial_position_embeddings",
    "axial_position_shape", "axial_position_dims", "axial_initializer_stddev", "max_sequence_length", "dropout",
    "lsh_attention_dropout", "local_attention_dropout", "activation", "layer_norm_epsilon", "initializer_range",
    "feed_forward_chunk_size", "padding_token_id", "remat", "invert_blocks", "output_hidden_states",
)
ATTENTION_TYPES = ("lsh", "local")


def check_attention_types(attn_layers):
    """A ValueError naming the fix for an `attn_layers` entry other than "lsh" or "local"."""
    unknown = [kind for kind in attn_layers if kind not in ATTENTION_TYPES]
    if unknown or not attn_layers:
        raise ValueError(f"attn_layers={list(attn_layers)!r}: give one entry per layer, each 'lsh' or 'local' "
                         "(HF Reformer's attn_layers).")


def chunk_lengths(attn_layers, lsh_chunk_length, local_chunk_length):
    """(least common multiple, minimum) of the chunk lengths of the attention types in use (HF's padding rule)."""
    lengths = {"lsh": lsh_chunk_length, "local": local_chunk_length}
    used = [lengths[kind] for kind in sorted(set(attn_layers))]
    return math.lcm(*used), min(used)


@keras.saving.register_keras_serializable(package="kerasbert")
class ReformerBackbone(FamilyBackbone, keras.Model):
    """The Reformer encoder (HF `ReformerModel`, `is_decoder=False`).

    Word embeddings plus position embeddings (axial, `AxialPositionEmbedding`, or an ordinary table), no
    LayerNorm; then one `ReversibleBlock` per `attn_layers` entry, whose attention is `LshSelfAttention` ("lsh")
    or `ChunkedLocalSelfAttention` ("local"), on two residual streams that both start as the embeddings; then a
    LayerNorm over their concatenation `[y1, y2]`, so `sequence_output` is `2 * hidden_dim` wide (HF's
    `last_hidden_state`). With `output_hidden_states`, `hidden_states` holds the second stream before each block
    and after the last (HF's `hidden_states`). `segment_ids` is accepted and ignored; there is no pooler
    (`pooled_output` is `sequence_output`'s first position).

    Like HF, a sequence longer than the shortest chunk length that is no multiple of the chunk lengths' least
    common multiple is padded (with `padding_token_id`, masked) up to one, and the outputs are cut back to the
    input's length (HF leaves its `hidden_states` padded).

    LSH rotations are drawn at every call (see `LshSelfAttention`): with `hash_seed`, the same draw every call
    (not torch's numbers: HF parity sets each LSH layer's `rotations` to HF's draw); without, a fresh draw each
    call, so two calls on the same input differ slightly where buckets change.

    Reversibility and memory in training: by default the backward pass keeps every block's activations.
    `invert_blocks=True` recomputes each block's inputs from its outputs instead (`reversible_stack`, as HF's
    `_ReversibleFunction`): no activations kept inside the stack, at the cost of a second forward pass; the blocks
    must then draw no random numbers (no dropout, a `hash_seed`). `remat=True` runs each block under `keras.remat`
    (TensorFlow's `recompute_grad`, JAX's `checkpoint`): it keeps the streams at each block boundary and
    recomputes the blocks' insides, dropout included.

    Args:
        vocabulary_size, hidden_dim, num_heads, head_dim, intermediate_dim: HF `vocab_size`, `hidden_size`,
            `num_attention_heads`, `attention_head_size`, `feed_forward_size`.
        attn_layers: one "lsh" or "local" per layer. num_hashes, num_buckets, hash_seed: as `LshSelfAttention`.
        lsh_chunk_length, lsh_num_chunks_before, lsh_num_chunks_after: HF `lsh_attn_chunk_length`, ...
        local_chunk_length, local_num_chunks_before, local_num_chunks_after: HF `local_attn_chunk_length`, ...
        axial_position_embeddings, axial_position_shape, axial_position_dims, axial_initializer_stddev: HF
            `axial_pos_embds`, `axial_pos_shape`, `axial_pos_embds_dim`, `axial_norm_std`.
        max_sequence_length: HF `max_position_embeddings`.
        dropout, lsh_attention_dropout, local_attention_dropout: HF `hidden_dropout_prob`,
            `lsh_attention_probs_dropout_prob`, `local_attention_probs_dropout_prob` (the axial embeddings' dropout
            is element-wise, not HF's `dropout2d` over grid rows).
        activation, layer_norm_epsilon, initializer_range: HF `hidden_act`, `layer_norm_eps`, `initializer_range`.
        feed_forward_chunk_size: HF `chunk_size_feed_forward` (0: unchunked). padding_token_id: HF `pad_token_id`.
        remat, invert_blocks: see above (one or the other). output_hidden_states: also return `hidden_states`.
        dtype: a dtype or policy.

    Examples:
        >>> backbone = ReformerBackbone(vocabulary_size=258, hidden_dim=32, num_heads=2, head_dim=16,
        ...                             intermediate_dim=64, attn_layers=["lsh", "local"], num_buckets=4,
        ...                             lsh_chunk_length=8, local_chunk_length=8, axial_position_shape=(8, 8),
        ...                             axial_position_dims=(8, 24), max_sequence_length=64)
        >>> ids = ops.ones((1, 20), "int32")
        >>> tuple(backbone({"token_ids": ids, "segment_ids": ids * 0, "padding_mask": ids})["sequence_output"].shape)
        (1, 20, 64)
    """

    family = "reformer"  # the HF model_type whose checkpoints name this class's weights
    task_models = False  # no task model takes it yet (its output is twice the hidden width, no pooler)

    def __init__(self, vocabulary_size=320, hidden_dim=256, num_heads=12, head_dim=64, intermediate_dim=512,
                 attn_layers=("local", "lsh", "local", "lsh", "local", "lsh"), num_hashes=1, num_buckets=None,
                 lsh_chunk_length=64, lsh_num_chunks_before=1, lsh_num_chunks_after=0, local_chunk_length=64,
                 local_num_chunks_before=1, local_num_chunks_after=0, hash_seed=None, axial_position_embeddings=True,
                 axial_position_shape=(64, 64), axial_position_dims=(64, 192), axial_initializer_stddev=1.0,
                 max_sequence_length=4096, dropout=0.05, lsh_attention_dropout=0.0, local_attention_dropout=0.05,
                 activation="relu", layer_norm_epsilon=1e-12, initializer_range=0.02, feed_forward_chunk_size=0,
                 padding_token_id=0, remat=False, invert_blocks=False, output_hidden_states=False, dtype=None,
                 **kwargs):
        super().__init__(dtype=dtype, **kwargs)
        check_attention_types(attn_layers)
        if axial_position_embeddings and sum(axial_position_dims) != hidden_dim:
            raise ValueError(f"axial_position_dims={list(axial_position_dims)} must sum to hidden_dim={hidden_dim} "
                             "(HF axial_pos_embds_dim and hidden_size).")
        # === Layers ===
        policy = self.dtype_policy
        self.token_embedding = keras.layers.Embedding(vocabulary_size, hidden_dim, dtype=policy, name="token_embedding",
                                                      embeddings_initializer=weight_initializer(initializer_range))
        self.token_embedding.build((None, None))
        if axial_position_embeddings:
            self.position_embedding = AxialPositionEmbedding(axial_position_shape, axial_position_dims,
                                                             axial_initializer_stddev, dtype=policy,
                                                             name="position_embedding")
        else:
            self.position_embedding = keras.layers.Embedding(
                max_sequence_length, hidden_dim, embeddings_initializer=weight_initializer(initializer_range),
                dtype=policy, name="position_embedding")
            self.position_embedding.build((None, None))
        self.embedding_dropout = keras.layers.Dropout(dropout, dtype=policy, name="embedding_dropout")
        arguments = dict(locals())
        self.encoder_blocks = [ReversibleBlock(
            self.make_attention(kind, i, arguments), intermediate_dim, activation, dropout, layer_norm_epsilon,
            initializer_range, feed_forward_chunk_size, dtype=policy, name=f"encoder_block_{i}",
        ) for i, kind in enumerate(attn_layers)]
        for block in self.encoder_blocks:
            block.build((None, None, hidden_dim))
        if invert_blocks:
            if remat:
                raise ValueError("remat=True and invert_blocks=True: choose one way to save memory in training.")
            check_replayable(self.encoder_blocks)
        self.final_layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_epsilon, dtype=policy,
                                                                name="final_layer_norm")
        self.final_layer_norm.build((None, None, 2 * hidden_dim))
        self.output_dropout = keras.layers.Dropout(dropout, dtype=policy, name="output_dropout")

        # === Config ===
        for name in CONFIG_NAMES:
            setattr(self, name, arguments[name])
        self.attn_layers = list(attn_layers)
        self.axial_position_shape = list(axial_position_shape)
        self.axial_position_dims = list(axial_position_dims)
        self.num_buckets = num_buckets if num_buckets is None or isinstance(num_buckets, int) else list(num_buckets)
        self.num_layers = len(self.attn_layers)
        self.chunk_multiple, self.min_chunk_length = chunk_lengths(attn_layers, lsh_chunk_length, local_chunk_length)
        self.built = True  # every weight exists: a fresh backbone loads weights and saves at once

    @staticmethod
    def make_attention(kind, index, arguments):
        """Layer `index`'s attention of `kind` ("lsh" or "local") from the backbone's `arguments`."""
        common = dict(num_heads=arguments["num_heads"], head_dim=arguments["head_dim"],
                      initializer_range=arguments["initializer_range"], dtype=arguments["self"].dtype_policy,
                      name="attention")
        if kind == "lsh":
            return LshSelfAttention(
                chunk_length=arguments["lsh_chunk_length"], num_hashes=arguments["num_hashes"],
                num_buckets=arguments["num_buckets"], num_chunks_before=arguments["lsh_num_chunks_before"],
                num_chunks_after=arguments["lsh_num_chunks_after"], hash_seed=arguments["hash_seed"],
                max_sequence_length=arguments["max_sequence_length"],
                attention_dropout=arguments["lsh_attention_dropout"], **common)
        return ChunkedLocalSelfAttention(
            chunk_length=arguments["local_chunk_length"], num_chunks_before=arguments["local_num_chunks_before"],
            num_chunks_after=arguments["local_num_chunks_after"],
            attention_dropout=arguments["local_attention_dropout"], **common)

    def pad_to_chunks(self, token_ids, padding_mask):
        """HF's padding: a sequence longer than the shortest chunk is padded to a multiple of the chunk lengths'
        least common multiple (padding token, masked)."""
        length = sequence_length(token_ids)
        extra = (-length) % self.chunk_multiple
        if isinstance(length, int):
            extra = extra if length > self.min_chunk_length else 0
        else:
            extra = ops.where(length > self.min_chunk_length, extra, 0)
        batch = ops.shape(token_ids)[0]
        token_ids = ops.concatenate([token_ids, ops.full((batch, extra), self.padding_token_id, token_ids.dtype)], 1)
        padding_mask = ops.concatenate([ops.cast(padding_mask, "bool"), ops.zeros((batch, extra), "bool")], 1)
        return token_ids, padding_mask

    def call(self, inputs, training=False):
        length = sequence_length(inputs["token_ids"])
        token_ids, padding_mask = self.pad_to_chunks(ops.convert_to_tensor(inputs["token_ids"]),
                                                     ops.convert_to_tensor(inputs["padding_mask"]))
        x = self.embedding_dropout(self.token_embedding(token_ids), training=training)
        if isinstance(self.position_embedding, AxialPositionEmbedding):
            positions = self.position_embedding(x)
        else:
            positions = self.position_embedding(ops.arange(ops.shape(x)[1])[None])
        x1 = x2 = x + self.embedding_dropout(positions, training=training)
        hidden_states = []
        if training and self.invert_blocks:
            if self.output_hidden_states:
                raise ValueError("output_hidden_states=True in training with invert_blocks=True: the inverted "
                                 "backward pass keeps no hidden states; train without one or the other.")
            x1, x2 = reversible_stack(self.encoder_blocks, x1, x2, padding_mask)
        else:
            for block in self.encoder_blocks:
                hidden_states.append(x2[:, :length])
                x1, x2 = self.run_block(block, x1, x2, padding_mask, training)
            hidden_states.append(x2[:, :length])
        x = self.final_layer_norm(ops.concatenate([x1, x2], axis=-1))
        x = self.output_dropout(x, training=training)[:, :length]
        outputs = {"sequence_output": x, "pooled_output": x[:, 0, :]}
        if self.output_hidden_states:
            outputs["hidden_states"] = hidden_states
        return outputs

    def run_block(self, block, x1, x2, padding_mask, training):
        """`block` on the two streams, under `keras.remat` with `remat` (its inputs positional: TensorFlow's
        `recompute_grad` takes no keywords in a graph)."""
        def step(a, b):
            return block(a, b, padding_mask, training=training)

        return keras.remat(step)(x1, x2) if self.remat else step(x1, x2)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.dtype_policies.serialize(self.token_embedding.dtype_policy),
                **{name: getattr(self, name) for name in CONFIG_NAMES}}
