"""AlbertBackbone: BERT's encoder with factorised embeddings and one block shared by every layer."""

import keras

from kerasbert.families.bert.bert_backbone import BertBackbone


@keras.saving.register_keras_serializable(package="kerasbert")
class AlbertBackbone(BertBackbone):
    """ALBERT (Lan et al., 2019) as a `BertBackbone`: factorised embeddings and cross-layer sharing.

    The embedding tables are `embedding_dim` wide (LayerNorm on that width), then the Dense
    `embedding_projection` (HF `embedding_hidden_mapping_in`) maps them to `hidden_dim`. The layers share
    their weights: `num_block_groups` groups of `blocks_per_group` blocks (HF `num_hidden_groups`,
    `inner_group_num`); every released ALBERT has 1 and 1, one block applied `num_layers` times.
    `pooled_output` is HF `AlbertModel`'s pooler (dense + tanh on `[CLS]`). Defaults are ALBERT v2's: the
    tanh GELU (HF "gelu_new") and no dropout. Other arguments are `BertBackbone`'s.

    Examples:
        >>> backbone = AlbertBackbone.from_preset("albert_base_v2", load_weights=False)
        >>> backbone.count_params(), len(backbone.encoder_blocks)
        (11683584, 1)
    """

    family = "albert"

    def __init__(self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, embedding_dim=128,
                 num_block_groups=1, blocks_per_group=1, **kwargs):
        if not embedding_dim:
            raise ValueError("AlbertBackbone needs embedding_dim (ALBERT always projects its embeddings to "
                             f"hidden_dim; 128 in the released models), got {embedding_dim!r}.")
        albert = {"activation": "gelu_approximate", "dropout": 0.0, "attention_dropout": 0.0}  # v2's, not BERT's
        super().__init__(vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
                         embedding_dim=embedding_dim, num_block_groups=num_block_groups,
                         blocks_per_group=blocks_per_group, **{**albert, **kwargs})
