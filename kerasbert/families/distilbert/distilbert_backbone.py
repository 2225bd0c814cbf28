"""DistilBertBackbone: BERT's encoder without segment embeddings and without a pooler."""

import keras

from kerasbert.families.bert.bert_backbone import BertBackbone


@keras.saving.register_keras_serializable(package="kerasbert")
class DistilBertBackbone(BertBackbone):
    """DistilBERT (Sanh et al., 2019) as a `BertBackbone`: no segment embeddings, no pooler.

    It takes the same inputs as BERT; `segment_ids` are accepted and ignored. HF `DistilBertModel` has no
    pooler, so `pooled_output` is the `[CLS]` hidden state, `sequence_output[:, 0]` (what HF's DistilBERT
    classifiers feed their `pre_classifier`). Its weights load from and export to HF names
    (`transformer.layer.{i}.attention.q_lin`, `sa_layer_norm`, `ffn.lin1`, ...). Defaults are
    distilbert-base's; other arguments are `BertBackbone`'s.

    Examples:
        >>> backbone = DistilBertBackbone.from_preset("distilbert_base_uncased", load_weights=False)
        >>> backbone.count_params()
        66362880
    """

    family = "distilbert"

    def __init__(self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, **kwargs):
        distilbert = {"num_segments": 0, "use_pooler": False}  # its defaults where they are not BERT's
        super().__init__(vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
                         **{**distilbert, **kwargs})
