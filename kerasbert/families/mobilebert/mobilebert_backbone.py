"""MobileBertBackbone: MobileBERT's bottlenecked encoder as a functional keras.Model."""

import keras

from kerasbert.families.bert.bert_backbone import (
    backbone_outputs,
    run_blocks,
)
from kerasbert.families.family_backbone import FamilyBackbone
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.mobilebert_embedding import MobileBertEmbedding
from kerasbert.layers.mobilebert_encoder_block import MobileBertEncoderBlock
from kerasbert.layers.no_norm import check_normalization_type
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS

# What BertBackbone has and MobileBertBackbone has not: task models and fine-tuning modes may ask for them.
PARAMETER_EFFICIENT = ("adapter_size", "lora_rank")


@keras.saving.register_keras_serializable(package="kerasbert")
class MobileBertBackbone(FamilyBackbone, keras.Model):
    """MobileBERT (Sun et al., 2020) exactly as HF `MobileBertModel` computes it.

    `MobileBertEmbedding` (narrow token embeddings, trigram input, projection to `hidden_dim`), then
    `num_layers` `MobileBertEncoderBlock`s (bottlenecks to `intra_bottleneck_dim`, attention over that width,
    `num_feedforward_networks` feed-forward networks), NoNorm or LayerNorm by `normalization_type`.
    Inputs and outputs are `BertBackbone`'s (`token_ids`, `segment_ids`, `padding_mask` in;
    `sequence_output`, `pooled_output`, and `hidden_states` / `attentions` when asked, out). `pooled_output`
    is HF `MobileBertPooler`: dense + tanh on `[CLS]` with `use_pooler` (HF `classifier_activation`), else
    the `[CLS]` hidden state unchanged. Defaults are HF `MobileBertConfig()`'s (google/mobilebert-uncased's
    sizes). Its blocks are no `TransformerEncoderBlock`s, so it has no adapters or LoRA (fine-tune it
    in full or frozen) and no encoder_block option.

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim: the size (`num_heads` divide
            the attention width: `intra_bottleneck_dim` with a bottleneck, else `hidden_dim`).
        embedding_dim: the token embedding width (HF `embedding_size`).
        intra_bottleneck_dim: HF `intra_bottleneck_size`.
        use_bottleneck, use_bottleneck_attention, key_query_shared_bottleneck: as HF `MobileBertConfig`.
        num_feedforward_networks, normalization_type, trigram_input: as HF `MobileBertConfig`.
        use_pooler: HF `classifier_activation`.
        dropout, attention_dropout, max_sequence_length, num_segments, activation: as `BertBackbone`.
        layer_norm_epsilon, initializer_range, output_hidden_states, output_attentions, dtype: as `BertBackbone`.

    Examples:
        >>> MobileBertBackbone().count_params()  # HF MobileBertModel(MobileBertConfig()).num_parameters()
        24844544
        >>> MobileBertBackbone(use_pooler=False).count_params()  # HF classifier_activation=False: no pooler dense
        24581888
    """

    family = "mobilebert"  # the HF model_type whose checkpoints name this class's weights
    config_names = (  # the constructor arguments get_config returns
        "vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "embedding_dim",
        "intra_bottleneck_dim", "use_bottleneck", "use_bottleneck_attention", "key_query_shared_bottleneck",
        "num_feedforward_networks", "normalization_type", "trigram_input", "use_pooler", "dropout",
        "attention_dropout", "max_sequence_length", "num_segments", "activation", "layer_norm_epsilon",
        "initializer_range", "output_hidden_states", "output_attentions")

    def __init__(self, vocabulary_size=30522, num_layers=24, num_heads=4, hidden_dim=512, intermediate_dim=512,
                 embedding_dim=128, intra_bottleneck_dim=128, use_bottleneck=True, use_bottleneck_attention=False,
                 key_query_shared_bottleneck=True, num_feedforward_networks=4, normalization_type="no_norm",
                 trigram_input=True, use_pooler=True, dropout=0.0, attention_dropout=0.1, max_sequence_length=512,
                 num_segments=2, activation="relu", layer_norm_epsilon=1e-12, initializer_range=0.02,
                 output_hidden_states=False, output_attentions=False, dtype=None, **kwargs):
        asked = [name for name in PARAMETER_EFFICIENT if kwargs.pop(name, None)]
        if asked:
            raise ValueError(f"MobileBertBackbone has no adapters or LoRA updates ({', '.join(asked)} given): its "
                             "blocks are MobileBertEncoderBlocks. Fine-tune it with fine_tuning='full' or 'frozen'.")
        check_normalization_type(normalization_type)
        if not embedding_dim:
            raise ValueError(f"MobileBertBackbone needs embedding_dim (HF embedding_size; 128 in "
                             f"google/mobilebert-uncased), got {embedding_dim!r}.")

        # === Layers ===
        embedding = MobileBertEmbedding(vocabulary_size, embedding_dim, hidden_dim, max_sequence_length, num_segments,
                                        trigram_input, normalization_type, dropout, initializer_range, dtype=dtype,
                                        name="embedding")
        blocks = [
            MobileBertEncoderBlock(
                num_heads, intermediate_dim, intra_bottleneck_dim, use_bottleneck, use_bottleneck_attention,
                key_query_shared_bottleneck, num_feedforward_networks, normalization_type, activation, dropout,
                attention_dropout, layer_norm_epsilon, initializer_range, dtype=dtype, name=f"encoder_block_{i}",
            )
            for i in range(num_layers)
        ]
        pooler = keras.layers.Dense(hidden_dim, activation="tanh", dtype=dtype, name="pooler",
                                    kernel_initializer=weight_initializer(initializer_range)) if use_pooler else None

        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in PACKED_INPUTS}
        x = embedding(inputs["token_ids"], inputs["segment_ids"])
        x, hidden_states, attentions = run_blocks(blocks, x, inputs["padding_mask"], output_attentions)
        outputs = backbone_outputs(x, pooler, hidden_states, attentions, output_hidden_states, output_attentions)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        self.keep_config(locals())
        self.embedding = embedding
        self.embedding_projection = None  # inside `embedding` (HF `embeddings.embedding_transformation`)
        self.encoder_blocks = blocks
        self.final_layer_norm = None
        self.pooler = pooler

    @property
    def token_embedding(self):
        """The token `Embedding` layer (`embedding_dim` wide)."""
        return self.embedding.token_embedding
