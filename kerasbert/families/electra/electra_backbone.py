"""ElectraBackbone: BERT's encoder with narrower embeddings and without a pooler."""

import keras

from kerasbert.families.bert.bert_backbone import BertBackbone


@keras.saving.register_keras_serializable(package="kerasbert")
class ElectraBackbone(BertBackbone):
    """The ELECTRA discriminator (Clark et al., 2020) as a `BertBackbone`.

    Its embedding tables are `embedding_dim` wide; when that differs from `hidden_dim` the Dense
    `embedding_projection` (HF `embeddings_project`) maps them to `hidden_dim` (an `embedding_dim` equal to
    `hidden_dim` means no projection, as in HF). HF `ElectraModel` has no pooler, so `pooled_output` is the
    `[CLS]` hidden state, `sequence_output[:, 0]` (what HF's ELECTRA classifiers start from). Other
    arguments are `BertBackbone`'s.

    Examples:
        >>> backbone = ElectraBackbone.from_preset("electra_small_discriminator", load_weights=False)
        >>> backbone.count_params()
        13483008
    """

    family = "electra"

    def __init__(self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, embedding_dim=None,
                 use_pooler=False, **kwargs):
        super().__init__(vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
                         embedding_dim=None if embedding_dim == hidden_dim else embedding_dim,
                         use_pooler=use_pooler, **kwargs)
