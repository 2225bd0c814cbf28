"""ElectraGenerator: ELECTRA's small masked LM, which reads the discriminator's embedding layer."""

import keras

from kerasbert.families.bert.bert_backbone import run_blocks
from kerasbert.families.family_heads import masked_lm_head_names
from kerasbert.layers.encoder_block import TransformerEncoderBlock
from kerasbert.layers.heads import MaskedLMHead
from kerasbert.layers.initializers import weight_initializer
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS

GENERATOR_INPUTS = (*PACKED_INPUTS, "mask_positions")


def generator_config_for(backbone, size=0.25):
    """ELECTRA's generator for a discriminator `backbone`: `size` x its hidden width, heads and FFN width
    (at least one head), as many layers, the same activation, dropout, epsilon and initialiser (ELECTRA's
    `generator_hidden_size`; the paper uses 1/4 for Small and Large, 1/3 for Base).

    Examples:
        >>> generator_config_for(ElectraBackbone.from_preset("electra_small_discriminator", load_weights=False))
        {'num_layers': 12, 'num_heads': 1, 'hidden_dim': 64, 'intermediate_dim': 256, 'activation': 'gelu', ...}
    """
    if isinstance(size, bool) or not isinstance(size, (int, float)) or not 0 < size <= 1:
        raise ValueError(f"size must be a number in (0, 1], the generator's width over the discriminator's; "
                         f"got {size!r}. ELECTRA uses 1/4 (Small, Large) or 1/3 (Base).")
    return {"num_layers": backbone.num_layers, "num_heads": max(1, round(backbone.num_heads * size)),
            "hidden_dim": max(1, round(backbone.hidden_dim * size)),
            "intermediate_dim": max(1, round(backbone.intermediate_dim * size)),
            "activation": backbone.activation, "dropout": backbone.dropout,
            "attention_dropout": backbone.attention_dropout, "layer_norm_epsilon": backbone.layer_norm_epsilon,
            "initializer_range": backbone.initializer_range}


@keras.saving.register_keras_serializable(package="kerasbert")
class ElectraGenerator(keras.Model):
    """ELECTRA's generator (HF `ElectraForMaskedLM`) on the discriminator's embeddings (Clark et al., 2020).

    ELECTRA shares the token, segment and position embeddings (and their LayerNorm) between the generator and
    the discriminator: `embedding` is the discriminator's `TokenSegmentPositionEmbedding`, a live link (not
    configuration: the model that owns both re-links it when it is loaded). Then a Dense `embedding_projection`
    to `hidden_dim` (HF `embeddings_project`, when the widths differ), `num_layers` encoder blocks and a
    `MaskedLMHead` (HF `generator_predictions`, exact GELU) that maps to the embedding width and decodes with
    the shared token embedding (HF `generator_lm_head`).

    Inputs: `token_ids`, `segment_ids`, `padding_mask` `[batch, T]` and `mask_positions` `[batch, P]`; output:
    float32 `[batch, P, vocabulary]` logits.

    Args:
        embedding: the discriminator's embedding layer (`backbone.embedding`).
        num_layers, num_heads, hidden_dim, intermediate_dim: the size (`generator_config_for` gives ELECTRA's).
        activation, dropout, attention_dropout, layer_norm_epsilon, initializer_range: as in `BertBackbone`.

    Examples:
        >>> generator = ElectraGenerator(backbone.embedding, **generator_config_for(backbone))
        >>> logits = generator({"token_ids": ids, "segment_ids": segments, "padding_mask": mask,
        ...                     "mask_positions": positions})
    """

    family = "electra"

    def __init__(self, embedding, num_layers, num_heads, hidden_dim, intermediate_dim, activation="gelu",
                 dropout=0.1, attention_dropout=0.1, layer_norm_epsilon=1e-12, initializer_range=0.02, **kwargs):
        dtype = embedding.dtype_policy
        # === Layers ===
        embedding_projection = keras.layers.Dense(
            hidden_dim, dtype=dtype, name="embedding_projection",
            kernel_initializer=weight_initializer(initializer_range),
        ) if embedding.hidden_dim != hidden_dim else None
        blocks = [
            TransformerEncoderBlock(num_heads=num_heads, intermediate_dim=intermediate_dim, activation=activation,
                                    dropout=dropout, attention_dropout=attention_dropout,
                                    layer_norm_epsilon=layer_norm_epsilon, initializer_range=initializer_range,
                                    dtype=dtype, name=f"encoder_block_{i}")
            for i in range(num_layers)
        ]
        mlm_head = MaskedLMHead(
            embedding.vocabulary_size, token_embedding=embedding.token_embedding,
            activation=masked_lm_head_names(self.family).activation, layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range, transform_dim=embedding.hidden_dim, dtype=dtype, name="mlm_head",
        )

        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in GENERATOR_INPUTS}
        x = embedding(inputs["token_ids"], inputs["segment_ids"])
        if embedding_projection is not None:
            x = embedding_projection(x)
        x, _, _ = run_blocks(blocks, x, inputs["padding_mask"], output_attentions=False)
        outputs = mlm_head(x, inputs["mask_positions"])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.embedding = embedding
        self.embedding_projection = embedding_projection
        self.encoder_blocks = blocks
        self.mlm_head = mlm_head

    def get_config(self):
        """The size and settings; the shared `embedding` is a link that its owner restores."""
        return {"name": self.name, "trainable": self.trainable, "num_layers": self.num_layers,
                "num_heads": self.num_heads, "hidden_dim": self.hidden_dim, "intermediate_dim": self.intermediate_dim,
                "activation": self.activation, "dropout": self.dropout, "attention_dropout": self.attention_dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon, "initializer_range": self.initializer_range}
