"""BertBackbone: the BERT encoder as a functional keras.Model."""

import keras

from kerasbert.families.albert.block_sharing import block_order, check_block_sharing
from kerasbert.families.checkpoint_weights import apply_checkpoint, export_hf_weights
from kerasbert.families.hf_expressible import check_hf_expressible
from kerasbert.families.layout_map import (
    backbone_weight_shapes,
    bert_layout_map,
    check_layouts_fit,
)
from kerasbert.layers.activations import get_activation
from kerasbert.layers.embedding import TokenSegmentPositionEmbedding
from kerasbert.layers.encoder_block import TransformerEncoderBlock
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.lora import DEFAULT_LORA_TARGETS, check_lora_targets
from kerasbert.layers.parameter_efficient import (
    copy_weights_by_path,
    is_parameter_efficient,
    merge_lora_weights,
    parameter_efficient_arguments,
)
from kerasbert.presets.checkpoint import FamilyMismatchError
from kerasbert.presets.hf_format import write_hf_folder
from kerasbert.presets.kerasbert_format import write_kerasbert_folder
from kerasbert.presets.loading import load_checkpoint
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS
from kerasbert.training.distribution import check_dtype_fits_the_device


def check_tokenizer_fits(backbone, tokenizer):
    """A `FamilyMismatchError` when `tokenizer` (None: nothing to check) is not a tokenizer of the backbone's
    family (a BERT WordPiece tokenizer in front of a RoBERTa backbone gives it ids of another vocabulary)."""
    families = getattr(tokenizer, "families", None)
    family = getattr(backbone, "family", "bert")
    if families is not None and family not in families:
        raise FamilyMismatchError(
            f"A {type(tokenizer).__name__} cannot feed a {type(backbone).__name__}: it reads {', '.join(families)} "
            f"vocabularies, the backbone is {family}. Load both from the same preset "
            "(Task.from_preset, or BertPreprocessor.from_preset for the tokenizer)."
        )


def pooler_function(pooler_activation):
    """The pooler's activation: "tanh", or a block activation's name (`get_activation`)."""
    return "tanh" if pooler_activation == "tanh" else get_activation(pooler_activation)


def resolve_block_class(encoder_block):
    """Accept a `TransformerEncoderBlock` subclass or its registered name."""
    if isinstance(encoder_block, str):
        found = keras.saving.get_registered_object(encoder_block)
        if found is None:
            raise ValueError(
                f"encoder_block {encoder_block!r} is not a registered Keras class; decorate "
                "your block with @keras.saving.register_keras_serializable() and import it "
                "before loading."
            )
        encoder_block = found
    if not (isinstance(encoder_block, type) and issubclass(encoder_block, TransformerEncoderBlock)):
        raise TypeError(
            f"encoder_block must be a TransformerEncoderBlock subclass, got {encoder_block!r}."
        )
    return encoder_block



def run_blocks(blocks, x, padding_mask, output_attentions, **block_inputs):
    """`(last output, [embedding output, each block's output], [each block's attention probabilities])`
    of the encoder blocks applied in turn (the probabilities only with `output_attentions`); `block_inputs`
    go to every block (DeBERTa's shared `rel_embeddings`)."""
    hidden_states, attentions = [x], []
    for block in blocks:
        if output_attentions:
            x, probabilities = block(x, padding_mask=padding_mask, return_attention_scores=True, **block_inputs)
            attentions.append(probabilities)
        else:
            x = block(x, padding_mask=padding_mask, **block_inputs)
        hidden_states.append(x)
    return x, hidden_states, attentions


def backbone_outputs(x, pooler, hidden_states, attentions, output_hidden_states, output_attentions):
    """A functional backbone's outputs: `sequence_output`, `pooled_output` (`pooler` on `[CLS]`, or the `[CLS]`
    state itself when `pooler` is None) and, when asked, `hidden_states` and `attentions`."""
    outputs = {"sequence_output": x, "pooled_output": pooler(x[:, 0, :]) if pooler else x[:, 0, :]}
    if output_hidden_states:
        outputs["hidden_states"] = hidden_states
    if output_attentions:
        outputs["attentions"] = attentions
    return outputs


def check_checkpoint_family(checkpoint, backbone_class):
    """A `FamilyMismatchError` naming the checkpoint's family when `backbone_class` builds another (a checkpoint
    that names none is BERT's)."""
    family = checkpoint.family or "bert"
    if family != backbone_class.family:
        raise FamilyMismatchError(
            f"{checkpoint.source} holds a {family!r} model; {backbone_class.__name__} builds "
            f"{backbone_class.family!r} models. kerasbert.families.backbone_class_for(checkpoint) gives the class "
            "of any checkpoint."
        )


@keras.saving.register_keras_serializable(package="kerasbert")
class BertBackbone(keras.Model):
    """The BERT encoder: embeddings, a stack of encoder blocks and the `[CLS]` pooler.

    Inputs are a dict of `token_ids`, `segment_ids` and `padding_mask` (each
    `[batch, T]`); outputs a dict of `sequence_output` `[batch, T, hidden]`,
    `pooled_output` `[batch, hidden]` (dense + tanh on `[CLS]`), and with
    `output_hidden_states=True` also `hidden_states`: the embedding output and every
    block's output, `num_layers + 1` tensors (ALBERT groups: one per block applied); with
    `output_attentions=True` also `attentions`, every block's attention probabilities.

    The other models of the family are options of this one, set by their classes (`AlbertBackbone`,
    `RobertaBackbone`, `DistilBertBackbone`, `ElectraBackbone`), whose `family` (an HF `model_type`)
    names their weights in HF checkpoints.

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim: the size.
        dropout: hidden dropout. attention_dropout: dropout on attention probabilities.
        max_sequence_length: learned positions. num_segments: segment types.
        activation: "gelu" (exact erf, HF checkpoints) or "gelu_approximate" (tanh).
        layer_norm_epsilon: LayerNorm epsilon. initializer_range: init std.
        normalize_first: pre-LN blocks (then a final LayerNorm follows the stack).
        encoder_block: a `TransformerEncoderBlock` subclass (or its registered name);
            subclasses take the same constructor arguments.
        output_hidden_states: also output every layer's hidden states.
        adapter_size: Houlsby adapters of this width in every block (see `Adapter`); None: none.
        lora_rank, lora_alpha, lora_targets, lora_dropout: LoRA updates in every block (see
            `LowRankUpdate`); None rank: none. Task models set these with `fine_tuning=`.
        output_attentions: also output every layer's attention probabilities, `"attentions"`: a
            list of `[batch, heads, T, T]` float32 (HF `output_attentions`), e.g. for probing:
            `BertBackbone.from_preset("all_minilm_l6_v2_en", output_attentions=True)`.
        embedding_dim: width of the embedding tables, projected to `hidden_dim` by a Dense
            `embedding_projection` (ALBERT and ELECTRA's factorised embeddings); None: `hidden_dim`,
            no projection.
        num_block_groups, blocks_per_group: cross-layer sharing (ALBERT's `num_hidden_groups` and
            `inner_group_num`, see `kerasbert.families.albert.block_sharing`); None groups: every layer its own block.
        padding_token_id: RoBERTa's positions, counted over the tokens other than this id from
            `padding_token_id + 1` (see `TokenSegmentPositionEmbedding`); None: 0, 1, ...
        use_pooler: False: no pooler, `pooled_output` is the `[CLS]` hidden state unchanged
            (DistilBERT and ELECTRA have no pooler).
        pooler_activation: the pooler's activation: "tanh" (BERT's), or one of the block's (the classification
            head of a fine-tuned HF BigBird, read into the pooler).
        block_settings: more constructor arguments for every block, the options of an `encoder_block` of your
            own (BigBird's `block_size`); None: none.
        dtype: a dtype or dtype policy, e.g. "mixed_bfloat16".

    Examples:
        >>> backbone = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=2,
        ...                         hidden_dim=16, intermediate_dim=64)
        >>> outputs = backbone({"token_ids": ops.ones((1, 4), "int32"),
        ...                     "segment_ids": ops.zeros((1, 4), "int32"),
        ...                     "padding_mask": ops.ones((1, 4), "int32")})
        >>> tuple(outputs["pooled_output"].shape)
        (1, 16)
    """

    family = "bert"  # the HF model_type whose checkpoints name this class's weights

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        attention_dropout=0.1,
        max_sequence_length=512,
        num_segments=2,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        normalize_first=False,
        encoder_block=TransformerEncoderBlock,
        output_hidden_states=False,
        output_attentions=False,
        adapter_size=None,
        lora_rank=None,
        lora_alpha=None,
        lora_targets=DEFAULT_LORA_TARGETS,
        lora_dropout=0.0,
        embedding_dim=None,
        num_block_groups=None,
        blocks_per_group=1,
        padding_token_id=None,
        use_pooler=True,
        pooler_activation="tanh",
        block_settings=None,
        dtype=None,
        **kwargs,
    ):
        block_class = resolve_block_class(encoder_block)
        check_block_sharing(num_layers, num_block_groups, blocks_per_group)
        lora_targets = check_lora_targets(lora_targets)
        parameter_efficient = parameter_efficient_arguments(hidden_dim, adapter_size, lora_rank, lora_alpha,
                                                            lora_targets, lora_dropout)
        check_dtype_fits_the_device(dtype)
        order = block_order(num_layers, num_block_groups, blocks_per_group)
        num_distinct_blocks = len(set(order))
        check_layouts_fit(backbone_weight_shapes(vocabulary_size, num_distinct_blocks, hidden_dim, intermediate_dim,
                                                 max_sequence_length, num_segments, normalize_first,
                                                 embedding_dim, use_pooler))

        # === Layers ===
        embedding = TokenSegmentPositionEmbedding(
            vocabulary_size, embedding_dim or hidden_dim, max_sequence_length, num_segments,
            dropout, layer_norm_epsilon, initializer_range, padding_token_id, dtype=dtype, name="embedding",
        )
        embedding_projection = keras.layers.Dense(
            hidden_dim, dtype=dtype, name="embedding_projection",
            kernel_initializer=weight_initializer(initializer_range),
        ) if embedding_dim else None
        blocks = [
            block_class(
                num_heads=num_heads, intermediate_dim=intermediate_dim, activation=activation,
                dropout=dropout, attention_dropout=attention_dropout,
                layer_norm_epsilon=layer_norm_epsilon, normalize_first=normalize_first,
                initializer_range=initializer_range, dtype=dtype, name=f"encoder_block_{i}",
                **parameter_efficient, **(block_settings or {}),
            )
            for i in range(num_distinct_blocks)
        ]
        final_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype="float32", name="final_layer_norm") if normalize_first else None
        pooler = keras.layers.Dense(
            hidden_dim, activation=pooler_function(pooler_activation), dtype=dtype, name="pooler",
            kernel_initializer=weight_initializer(initializer_range),
        ) if use_pooler else None

        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in PACKED_INPUTS}
        x = embedding(inputs["token_ids"], inputs["segment_ids"])
        if embedding_projection is not None:
            x = embedding_projection(x)
        x, hidden_states, attentions = run_blocks([blocks[i] for i in order], x, inputs["padding_mask"],
                                                  output_attentions)
        if final_layer_norm is not None:
            x = final_layer_norm(x)
        outputs = backbone_outputs(x, pooler, hidden_states, attentions, output_hidden_states, output_attentions)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.normalize_first = normalize_first
        self.encoder_block = block_class
        self.output_hidden_states = output_hidden_states
        self.output_attentions = output_attentions
        self.adapter_size = adapter_size
        self.lora_rank = lora_rank
        self.lora_alpha = lora_alpha
        self.lora_targets = lora_targets
        self.lora_dropout = lora_dropout
        self.embedding_dim = embedding_dim
        self.num_block_groups = num_block_groups
        self.blocks_per_group = blocks_per_group
        self.padding_token_id = padding_token_id
        self.use_pooler = use_pooler
        self.pooler_activation = pooler_activation
        self.block_settings = block_settings
        self.embedding = embedding
        self.embedding_projection = embedding_projection
        self.encoder_blocks = blocks
        self.final_layer_norm = final_layer_norm
        self.pooler = pooler

    @staticmethod
    def get_layout_map(device_mesh, model_parallel_dim_name="model", data_parallel_dim_name="batch"):
        """A `keras.distribution.LayoutMap` for `ModelParallel` training (Megatron layout; see
        `kerasbert.families.layout_map`). A backbone built under a distribution whose map does not
        fit its shapes raises a ValueError naming the weight.

        Examples:
            >>> mesh = keras.distribution.DeviceMesh((1, 2), ("batch", "model"), keras.distribution.list_devices())
            >>> parallel = keras.distribution.ModelParallel(layout_map=BertBackbone.get_layout_map(mesh))
            >>> with parallel.scope():
            ...     classifier = BertClassifier.from_preset("bert_base_en_uncased", num_classes=2)
        """
        return bert_layout_map(device_mesh, model_parallel_dim_name, data_parallel_dim_name)

    @property
    def token_embedding(self):
        """The token `Embedding` layer, for heads that tie their decoder to it."""
        return self.embedding.token_embedding

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.embedding.dtype_policy),
            "vocabulary_size": self.vocabulary_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "attention_dropout": self.attention_dropout,
            "max_sequence_length": self.max_sequence_length,
            "num_segments": self.num_segments,
            "activation": self.activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
            "normalize_first": self.normalize_first,
            "encoder_block": keras.saving.get_registered_name(self.encoder_block),
            "output_hidden_states": self.output_hidden_states,
            "output_attentions": self.output_attentions,
            "adapter_size": self.adapter_size,
            "lora_rank": self.lora_rank,
            "lora_alpha": self.lora_alpha,
            "lora_targets": list(self.lora_targets),
            "lora_dropout": self.lora_dropout,
            "embedding_dim": self.embedding_dim,
            "num_block_groups": self.num_block_groups,
            "blocks_per_group": self.blocks_per_group,
            "padding_token_id": self.padding_token_id,
            "use_pooler": self.use_pooler,
            "pooler_activation": self.pooler_activation,
            "block_settings": self.block_settings,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, load_weights=True, allow_pickle=False, **overrides):
        """Build the backbone of `preset` and load its weights.

        `preset`: a built-in name (`kerasbert.presets.preset_names()`), a kerasbert preset
        folder, a HF folder, a Google TF checkpoint folder, or `hf://org/name`.
        `load_weights=False` builds the architecture only (offline for built-in names).
        `allow_pickle=True` permits reading a HF `pytorch_model.bin`.
        `overrides` replace config values, e.g. `dropout=0.0`, `dtype="mixed_bfloat16"`,
        `encoder_block=MyBlock`, `output_hidden_states=True`, `output_attentions=True`.

        Examples:
            >>> backbone = BertBackbone.from_preset("all_minilm_l6_v2_en")
            >>> BertBackbone.from_preset("bert_base_en_uncased", load_weights=False).count_params()
            109482240
        """
        checkpoint = load_checkpoint(preset, load_weights, allow_pickle)
        return cls.from_checkpoint(checkpoint, **overrides)

    @classmethod
    def from_checkpoint(cls, checkpoint, **overrides):
        """Build from a `kerasbert.presets.Checkpoint`, loading its weights if it carries any. A checkpoint of
        another family (`checkpoint.family`) is a `FamilyMismatchError` naming it."""
        check_checkpoint_family(checkpoint, cls)
        config = {**checkpoint.backbone_config, **overrides}
        backbone = cls(**config)
        if checkpoint.state_dict is None and checkpoint.keras_weights_path is None:
            return backbone
        if is_parameter_efficient(config) and not is_parameter_efficient(checkpoint.backbone_config):
            # The checkpoint holds the stock weights: load them as they were saved, then the adapters or
            # LoRA factors around them keep their (identity) initialisation.
            stock = cls(**{**config, "adapter_size": None, "lora_rank": None})
            apply_checkpoint(stock, checkpoint)
            copy_weights_by_path(stock, backbone)
        else:
            apply_checkpoint(backbone, checkpoint)
        return backbone

    def merged(self):
        """This backbone without LoRA: a stock backbone whose kernels hold `W + A @ B * alpha / r`, with the
        same outputs (to float rounding) and no extra matrix products; it exports to HF. Adapters stay.

        Examples:
            >>> serving_backbone = lora_backbone.merged()
        """
        if not self.lora_rank:
            raise ValueError("This backbone has no LoRA updates to merge (it was built without lora_rank).")
        merged = type(self).from_config({**self.get_config(), "lora_rank": None})
        merge_lora_weights(self, merged)
        return merged

    def save_to_preset(self, folder, tokenizer=None, format="kerasbert", allow_lossy=False):
        """Write a preset folder that `from_preset` reads: `format="kerasbert"` (config, weights,
        vocabulary: holds any backbone) or `"hf"` (as `export_to_hf`).

        Examples:
            >>> backbone.save_to_preset("my_bert", tokenizer=tokenizer)
        """
        if format == "hf":
            return self.export_to_hf(folder, tokenizer, allow_lossy=allow_lossy)
        if format != "kerasbert":
            raise ValueError(f"format={format!r}: use 'kerasbert' (any backbone) or 'hf' (HF transformers).")
        check_tokenizer_fits(self, tokenizer)
        return write_kerasbert_folder(folder, self, tokenizer)

    def export_to_hf(self, folder, tokenizer=None, heads=None, id2label=None, allow_lossy=False):
        """Write a HF transformers folder (`config.json`, `model.safetensors`, vocabulary) of the HF base
        model of `family` (`BertModel`, `AlbertModel`, ...), which `transformers.AutoModel` loads.

        `heads` adds task weights under HF names (`cls.predictions.*`, `classifier.*`, ...; BERT only). A
        backbone HF cannot express (a research block, weights without HF names) is refused
        with a ValueError naming what would be lost; `allow_lossy=True` writes the stock part
        with a warning (see `kerasbert.families.hf_expressible`).

        Examples:
            >>> backbone.export_to_hf("hf_bert", tokenizer=tokenizer)
            >>> transformers.AutoModel.from_pretrained("hf_bert")
        """
        if (heads or id2label) and self.family != "bert":
            raise ValueError(f"Task heads are written to HF folders of BERT only; this is a {self.family} "
                             "backbone. Export the backbone alone, or save the task with save_to_preset.")
        check_hf_expressible(self, allow_lossy)
        check_tokenizer_fits(self, tokenizer)
        state_dict = {**export_hf_weights(self), **(heads or {})}
        return write_hf_folder(folder, self.get_config(), state_dict, tokenizer, id2label, self.family)
