"""DebertaV2Backbone: DeBERTa-v2/v3's disentangled-attention encoder as a functional keras.Model."""

import keras

from kerasbert.families.bert.bert_backbone import (
    backbone_outputs,
    run_blocks,
)
from kerasbert.families.family_backbone import FamilyBackbone
from kerasbert.layers.deberta_embedding import DebertaEmbedding, RelativeEmbeddingTable
from kerasbert.layers.deberta_encoder_block import DebertaEncoderBlock
from kerasbert.layers.disentangled_attention import check_position_attention
from kerasbert.layers.enhanced_mask_decoder import EnhancedMaskDecoder
from kerasbert.layers.initializers import weight_initializer
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS

# What BertBackbone has and DebertaV2Backbone has not: task models and fine-tuning modes may ask for them.
PARAMETER_EFFICIENT = ("adapter_size", "lora_rank")
REL_EMBEDDING_NORMS = ("none", "layer_norm")
MASK_DECODER_TABLE = "embeddings.position_embeddings.weight"  # its name in the published checkpoints
POOLER_ACTIVATIONS = ("gelu", "relu", "silu", "tanh")  # HF pooler_hidden_act values whose keras name is the same


def check_norm_rel_ebd(norm_rel_ebd):
    """HF `norm_rel_ebd` ("layer_norm", "none", parts joined by "|") -> whether the relative table is
    LayerNormed, or a ValueError naming the known parts."""
    parts = [part.strip() for part in str(norm_rel_ebd).lower().split("|")]
    unknown = [part for part in parts if part not in REL_EMBEDDING_NORMS]
    if unknown:
        raise ValueError(f"norm_rel_ebd={norm_rel_ebd!r}: kerasbert knows {list(REL_EMBEDDING_NORMS)} "
                         "(HF DebertaV2Config norm_rel_ebd).")
    return "layer_norm" in parts


@keras.saving.register_keras_serializable(package="kerasbert")
class DebertaV2Backbone(FamilyBackbone, keras.Model):
    """DeBERTa-v2 / v3 (He et al., 2021, 2023) exactly as HF `DebertaV2Model` computes it.

    `DebertaEmbedding` (token, absolute position embeddings only with `position_biased_input`, segment
    embeddings only when `num_segments > 0`; LayerNorm; zeros at padding), then `num_layers`
    `DebertaEncoderBlock`s that share one `RelativeEmbeddingTable` (`2 * position_buckets` rows, or
    `2 * max_relative_positions` without buckets; LayerNormed with `norm_rel_ebd="layer_norm"`). Inputs and
    outputs are `BertBackbone`'s (`token_ids`, `segment_ids`, `padding_mask` in; `sequence_output`,
    `pooled_output`, and `hidden_states` / `attentions` when asked, out). `pooled_output` is HF's `ContextPooler`
    of its sequence classifiers and multiple-choice models (a Dense of the `[CLS]` hidden state with
    `pooler_activation`, HF `pooler_hidden_act`): HF's base model has none, so it loads from a fine-tuned
    `DebertaV2ForSequenceClassification` / `ForMultipleChoice` folder (`pooler.dense.*`) and otherwise starts
    fresh, as HF's task models start it; it is not written to HF folders (`DebertaV2Model` has no place for it).
    With `enhanced_mask_decoder=True` the outputs also hold `mask_decoder_output`: DeBERTa's enhanced mask decoder
    (`EnhancedMaskDecoder`: the last block run twice more, its queries given absolute positions), which the
    masked-LM heads (`BertMaskedLM`, the pre-trainers, `DebertaGenerator`) then read instead of `sequence_output`,
    as DeBERTa's own pre-training code does; its position table loads from the published checkpoints'
    `embeddings.position_embeddings.weight` (HF's `DebertaV2Model` drops it). Defaults are
    microsoft/deberta-v3-base's sizes and settings. Its blocks are no `TransformerEncoderBlock`s, so it has no
    adapters or LoRA (fine-tune it in full or frozen).

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim: the size.
        relative_attention, pos_att_type, position_buckets, share_att_key: as HF `DebertaV2Config`.
        norm_rel_ebd, position_biased_input: as HF `DebertaV2Config`.
        max_relative_positions: HF's; below 1 means `max_sequence_length` (as HF).
        num_segments: HF `type_vocab_size` (0: no segment embeddings).
        dropout, attention_dropout, max_sequence_length, activation: as `BertBackbone`.
        enhanced_mask_decoder: add DeBERTa's enhanced mask decoder and its `mask_decoder_output` (only without
            `position_biased_input`: with absolute positions in the input DeBERTa's decoder is the last block).
        pooler_activation: the `ContextPooler`'s activation (HF `pooler_hidden_act`: "gelu", the exact GELU,
            "relu", "silu" or "tanh").
        layer_norm_epsilon, initializer_range, output_hidden_states, output_attentions, dtype: as `BertBackbone`.

    Examples:
        >>> backbone = DebertaV2Backbone(vocabulary_size=1000, num_layers=2, num_heads=4, hidden_dim=32,
        ...                              intermediate_dim=64, position_buckets=8, max_relative_positions=16)
        >>> sorted(backbone(backbone.input)) == ["pooled_output", "sequence_output"]
        True
    """

    family = "deberta-v2"  # the HF model_type whose checkpoints name this class's weights
    # The fine-tuned HF heads that BERT's task models load (name, HF class) where BERT's class names differ.
    hf_heads = {"BertClassifier": ("classifier", "DebertaV2ForSequenceClassification"),
                "BertTokenClassifier": ("classifier", "DebertaV2ForTokenClassification")}
    task_pooler = ("pooler.dense", None)  # HF's ContextPooler (sequence classification, multiple choice)
    config_names = (  # the constructor arguments get_config returns
        "vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "relative_attention",
        "pos_att_type", "position_buckets", "max_relative_positions", "share_att_key", "norm_rel_ebd",
        "position_biased_input", "num_segments", "dropout", "attention_dropout", "max_sequence_length",
        "activation", "pooler_activation", "enhanced_mask_decoder", "layer_norm_epsilon", "initializer_range",
        "output_hidden_states", "output_attentions")

    def __init__(self, vocabulary_size=128100, num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072,
                 relative_attention=True, pos_att_type=("p2c", "c2p"), position_buckets=256,
                 max_relative_positions=-1, share_att_key=True, norm_rel_ebd="layer_norm",
                 position_biased_input=False, num_segments=0, dropout=0.0, attention_dropout=0.0,
                 max_sequence_length=512, activation="gelu", pooler_activation="gelu", enhanced_mask_decoder=False,
                 layer_norm_epsilon=1e-7, initializer_range=0.02, output_hidden_states=False, output_attentions=False, dtype=None, **kwargs):
        asked = [name for name in PARAMETER_EFFICIENT if kwargs.pop(name, None)]
        if asked:
            raise ValueError(f"DebertaV2Backbone has no adapters or LoRA updates ({', '.join(asked)} given): its "
                             "blocks are DebertaEncoderBlocks. Fine-tune it with fine_tuning='full' or 'frozen'.")
        pos_att_type = check_position_attention(pos_att_type)
        if pooler_activation not in POOLER_ACTIVATIONS:
            raise ValueError(f"pooler_activation={pooler_activation!r} (HF pooler_hidden_act): kerasbert's DeBERTa "
                             f"pooler takes {list(POOLER_ACTIVATIONS)} (keras' gelu is the exact one, as HF's).")
        if enhanced_mask_decoder and position_biased_input:
            raise ValueError("enhanced_mask_decoder=True with position_biased_input=True: absolute positions are "
                             "already in the input, where DeBERTa's decoder adds nothing (its output is the last "
                             "block's). Use one or the other.")
        normalize_relative = check_norm_rel_ebd(norm_rel_ebd)
        relative_span = max_relative_positions if max_relative_positions >= 1 else max_sequence_length
        table_rows = 2 * (position_buckets if position_buckets > 0 else relative_span)

        # === Layers ===
        embedding = DebertaEmbedding(vocabulary_size, hidden_dim, max_sequence_length, num_segments,
                                     position_biased_input, layer_norm_epsilon, dropout, initializer_range,
                                     dtype=dtype, name="embedding")
        relative_table = RelativeEmbeddingTable(table_rows, hidden_dim, normalize_relative, layer_norm_epsilon,
                                                initializer_range, dtype=dtype,
                                                name="relative_embedding") if relative_attention else None
        blocks = [
            DebertaEncoderBlock(num_heads, intermediate_dim, relative_attention, pos_att_type, position_buckets,
                                relative_span, share_att_key, activation, dropout, attention_dropout,
                                layer_norm_epsilon, initializer_range, dtype=dtype, name=f"encoder_block_{i}")
            for i in range(num_layers)
        ]
        pooler = keras.layers.Dense(hidden_dim, activation=pooler_activation, dtype=dtype,
                                    kernel_initializer=weight_initializer(initializer_range), name="pooler")
        mask_decoder = EnhancedMaskDecoder(blocks[-1], max_sequence_length, hidden_dim,
                                           initializer_range=initializer_range, dtype=dtype,
                                           name="mask_decoder") if enhanced_mask_decoder else None

        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in PACKED_INPUTS}
        x = embedding(inputs["token_ids"], inputs["segment_ids"], inputs["padding_mask"])
        rel_embeddings = relative_table(x) if relative_table is not None else None
        x, hidden_states, attentions = run_blocks(blocks, x, inputs["padding_mask"], output_attentions,
                                                  rel_embeddings=rel_embeddings)
        outputs = backbone_outputs(x, pooler, hidden_states, attentions, output_hidden_states, output_attentions)
        if mask_decoder is not None:  # it reads the last block's input
            outputs["mask_decoder_output"] = mask_decoder(hidden_states[-2], rel_embeddings, inputs["padding_mask"])
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        self.keep_config(locals())
        self.embedding = embedding
        self.embedding_projection = None
        self.relative_embedding = relative_table
        self.encoder_blocks = blocks
        self.final_layer_norm = None
        self.pooler = pooler
        self.mask_decoder = mask_decoder

    @classmethod
    def from_checkpoint(cls, checkpoint, **overrides):
        """`FamilyBackbone.from_checkpoint`, with a named error when the enhanced mask decoder is asked of an HF
        folder without its position table."""
        asked = {**checkpoint.backbone_config, **overrides}.get("enhanced_mask_decoder")
        hf_weights = checkpoint.state_dict if checkpoint.format == "hf" else None  # kerasbert presets: the h5 file
        if asked and hf_weights is not None and MASK_DECODER_TABLE not in hf_weights:
            raise ValueError(
                f"{checkpoint.source} has no {MASK_DECODER_TABLE}, the enhanced mask decoder's position table: the "
                "published DeBERTa checkpoints hold it, HF transformers' save_pretrained drops it. Load the published "
                "files, or leave enhanced_mask_decoder off (HF's masked LM reads the last layer).")
        return super().from_checkpoint(checkpoint, **overrides)

    @property
    def token_embedding(self):
        """The token `Embedding` layer."""
        return self.embedding.token_embedding
