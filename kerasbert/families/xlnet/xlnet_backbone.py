"""XLNetBackbone: XLNet's encoder (Yang et al. 2019) with Transformer-XL memory and the two-stream attention."""

import keras
from keras import ops

from kerasbert.families.bert.bert_backbone import check_checkpoint_family
from kerasbert.families.checkpoint_weights import assign_links, dense_links
from kerasbert.families.xlnet.xlnet_inputs import attention_masks, check_memory, check_permutation
from kerasbert.families.xlnet.xlnet_weights import SUMMARY, backbone_links
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.relative_attention import XLNetRelativeAttention
from kerasbert.layers.relative_position_encoding import relative_positional_encoding
from kerasbert.layers.relative_segment_encoding import relative_segment_encoding
from kerasbert.layers.xlnet_feed_forward import XLNetFeedForward
from kerasbert.presets.loading import load_checkpoint
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS


@keras.saving.register_keras_serializable(package="kerasbert")
class XLNetBackbone(keras.Model):
    """The XLNet encoder (HF `XLNetModel`, `attn_type="bi"`): word embeddings, then `num_layers` blocks of
    relative attention (`XLNetRelativeAttention`) and feed-forward (`XLNetFeedForward`).

    Inputs: a dict of `token_ids`, `segment_ids` and `padding_mask` `[batch, T]` (1 for real tokens, 0 for padding;
    XLNet pads on the left), and optionally
    - `memory`: one `[batch, M, hidden]` tensor per layer, the `new_memory` of the previous segment (HF `mems`,
      batch first): the keys start with it, always visible, in segment 0;
    - `perm_mask` `[batch, T, T]` (1: position i may not see position j) with `target_mapping` `[batch, P, T]`
      (row p one-hot on the position of prediction p): the permutation LM's query stream.

    Outputs: a dict of `sequence_output` `[batch, T, hidden]` (the content stream's last hidden states),
    `pooled_output` `[batch, hidden]` (HF `XLNetSequenceSummary` as `XLNetForSequenceClassification` configures
    it: the last real token, XLNet's `<cls>`, through `sequence_summary`, a tanh Dense; on either padding side), with
    `target_mapping` also `query_output` `[batch, P, hidden]` (the query stream's, HF's `last_hidden_state` then;
    `XLNetLMHead` makes it logits), and with `memory_length` also `new_memory`: per layer, the last
    `memory_length` of that layer's inputs (the memory, then this segment), without gradient.

    A subclassed Model rather than a functional graph: the optional inputs change the computation (a query stream
    exists only with a target mapping, the keys grow by the memory's length), which a graph of fixed inputs would
    have to fake with dummy tensors. Every weight is built in `__init__`, so a fresh backbone loads weights and
    `.keras` files at once.

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim: the size (HF `vocab_size`, `n_layer`,
            `n_head`, `d_model`, `d_inner`).
        dropout: HF's one `dropout` (embeddings, positions, attention, feed-forward, output).
        activation: the feed-forward activation (HF `ff_activation`; "gelu" is the exact erf form).
        layer_norm_epsilon, initializer_range: LayerNorm epsilon, initialiser stddev.
        memory_length: how many past hidden states `new_memory` keeps (HF `mem_len`); None or 0: no `new_memory`
            (HF's `mems` then hold every past state; pass them as `memory` all the same).
        clamp_length: relative distances are clipped to this (HF `clamp_len`); -1: not clipped.
        dtype: a dtype or dtype policy.

    Examples:
        >>> backbone = XLNetBackbone(vocabulary_size=100, num_layers=2, num_heads=4, hidden_dim=32,
        ...                          intermediate_dim=64, memory_length=8)
        >>> inputs = {"token_ids": ops.ones((1, 5), "int32"), "segment_ids": ops.zeros((1, 5), "int32"),
        ...           "padding_mask": ops.ones((1, 5), "int32")}
        >>> first = backbone(inputs)
        >>> second = backbone({**inputs, "memory": first["new_memory"]})
        >>> tuple(second["new_memory"][0].shape)
        (1, 8, 32)
    """

    family = "xlnet"  # the HF model_type whose checkpoints name this class's weights
    # The task models that take it, each with the HF head its default logits layer loads (name, HF class).
    task_models = {"BertClassifier": ("logits_proj", "XLNetForSequenceClassification"),
                   "BertQuestionAnswerer": ("qa_outputs", "XLNetForQuestionAnsweringSimple")}
    max_sequence_length = None  # relative positions: no position table bounds a segment

    def __init__(self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, dropout=0.1,
                 activation="gelu", layer_norm_epsilon=1e-12, initializer_range=0.02, memory_length=None,
                 clamp_length=-1, dtype=None, **kwargs):
        super().__init__(dtype=dtype, **kwargs)
        if memory_length is not None and (isinstance(memory_length, bool) or not isinstance(memory_length, int)
                                          or memory_length < 0):
            raise ValueError(f"memory_length must be a positive int (the hidden states kept as the next call's "
                             f"memory), or 0 or None (no new_memory); got {memory_length!r}.")
        # === Layers ===
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_dim, embeddings_initializer=weight_initializer(initializer_range),
            dtype=self.dtype_policy, name="token_embedding")
        self.token_embedding.build((None, None))
        self.mask_embedding = self.add_weight(shape=(1, 1, hidden_dim), name="mask_embedding",
                                              initializer=keras.initializers.RandomNormal(stddev=initializer_range))
        self.attention_layers, self.feed_forward_layers = [], []
        for index in range(num_layers):
            attention = XLNetRelativeAttention(num_heads, dropout, layer_norm_epsilon, initializer_range,
                                               dtype=self.dtype_policy, name=f"attention_{index}")
            feed_forward = XLNetFeedForward(intermediate_dim, activation, dropout, layer_norm_epsilon,
                                            initializer_range, dtype=self.dtype_policy, name=f"feed_forward_{index}")
            attention.build((None, None, hidden_dim))
            feed_forward.build((None, None, hidden_dim))
            self.attention_layers.append(attention)
            self.feed_forward_layers.append(feed_forward)
        # not `self.summary`: on torch the Model's `summary` method would shadow the layer
        self.sequence_summary = keras.layers.Dense(hidden_dim, activation="tanh", dtype=self.dtype_policy,
                                                   name="summary", kernel_initializer=weight_initializer(initializer_range))
        self.sequence_summary.build((None, hidden_dim))
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.built = True

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.memory_length = memory_length
        self.clamp_length = clamp_length

    def call(self, inputs, training=None):
        missing = [name for name in PACKED_INPUTS if name not in inputs]
        if missing:
            raise ValueError(f"XLNetBackbone inputs lack {missing}: pass a dict of token_ids, segment_ids and "
                             "padding_mask (and optionally memory, perm_mask with target_mapping).")
        token_ids = ops.convert_to_tensor(inputs["token_ids"])
        memory, perm_mask, target_mapping = (inputs.get(name) for name in ("memory", "perm_mask", "target_mapping"))
        if memory is not None:
            check_memory(memory, token_ids, self.num_layers, self.hidden_dim)
        check_permutation(perm_mask, target_mapping, token_ids)
        memory_length = 0 if memory is None else memory[0].shape[1]
        length = ops.shape(token_ids)[1]

        content = self.dropout_layer(self.token_embedding(token_ids), training=training)
        query = None
        if target_mapping is not None:
            query_shape = (ops.shape(target_mapping)[0], ops.shape(target_mapping)[1], self.hidden_dim)
            query = self.dropout_layer(ops.broadcast_to(ops.cast(self.mask_embedding, content.dtype), query_shape),
                                       training=training)
        segment_encoding = relative_segment_encoding(inputs["segment_ids"], memory_length)
        position_encoding = self.dropout_layer(
            relative_positional_encoding(length, memory_length + length, self.hidden_dim, self.clamp_length),
            training=training)
        content_mask, query_mask = attention_masks(inputs["padding_mask"], perm_mask, memory_length)

        new_memory = []
        for index, (attention, feed_forward) in enumerate(zip(self.attention_layers, self.feed_forward_layers)):
            layer_memory = None if memory is None else memory[index]
            if self.memory_length:
                kept = content if layer_memory is None else ops.concatenate(
                    [ops.cast(layer_memory, content.dtype), content], axis=1)
                new_memory.append(ops.stop_gradient(kept[:, -self.memory_length:]))
            content, query = attention(content, position_encoding, segment_encoding, content_mask, layer_memory,
                                       query, query_mask, target_mapping, training=training)
            if query is not None:
                query = feed_forward(query, training=training)
            content = feed_forward(content, training=training)

        content = self.dropout_layer(content, training=training)
        outputs = {"sequence_output": content, "pooled_output": self.sequence_summary(last_real_token(content,
                                                                                            inputs["padding_mask"]))}
        if query is not None:
            outputs["query_output"] = self.dropout_layer(query, training=training)
        if self.memory_length:
            outputs["new_memory"] = new_memory
        return outputs

    @property
    def input(self):
        """Symbolic `token_ids`, `segment_ids` and `padding_mask` `[batch, T]`: a task model's functional graph
        calls the backbone on them."""
        return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in PACKED_INPUTS}

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.dtype_policies.serialize(self.dtype_policy),
                "vocabulary_size": self.vocabulary_size, "num_layers": self.num_layers, "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim, "intermediate_dim": self.intermediate_dim, "dropout": self.dropout,
                "activation": self.activation, "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range, "memory_length": self.memory_length,
                "clamp_length": self.clamp_length}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, load_weights=True, allow_pickle=False, **overrides):
        """Build the backbone of `preset` (an HF XLNet folder: `config.json` and `model.safetensors`, or
        `pytorch_model.bin` with `allow_pickle=True`; or `hf://org/name`) and load its weights. `overrides` replace
        config values, e.g. `dropout=0.0`, `memory_length=None`.

        Examples:
            >>> backbone = XLNetBackbone.from_preset("my_xlnet_folder", memory_length=128)
        """
        return cls.from_checkpoint(load_checkpoint(preset, load_weights, allow_pickle), **overrides)

    @classmethod
    def from_checkpoint(cls, checkpoint, **overrides):
        """Build from a `kerasbert.presets.Checkpoint`, loading its weights if it carries any. A checkpoint of
        another family is a `FamilyMismatchError` naming it."""
        check_checkpoint_family(checkpoint, cls)
        backbone = cls(**{**checkpoint.backbone_config, **overrides})
        if checkpoint.state_dict is not None:
            assign_links(backbone_links(backbone), checkpoint.state_dict, checkpoint.source)
            summary = checkpoint.heads(f"{SUMMARY}.", "XLNetForSequenceClassification")
            if summary:  # a fine-tuned classifier's; else random, as HF's task model starts it
                assign_links(dense_links(backbone.sequence_summary, SUMMARY), summary, checkpoint.source)
        return backbone


def last_real_token(sequence, padding_mask):
    """`sequence[:, t]` at each row's last real token (`padding_mask` 1), XLNet's `<cls>` whether the row was
    padded on the left (HF) or on the right (kerasbert's dynamic batches)."""
    length = ops.shape(sequence)[1]
    last = ops.argmax(ops.cast(padding_mask, "int32") * ops.arange(1, length + 1, dtype="int32")[None, :], axis=1)
    return ops.sum(sequence * ops.cast(ops.one_hot(last, length), sequence.dtype)[:, :, None], axis=1)
