"""RobertaBackbone: BERT's encoder with RoBERTa's position ids and one segment type."""

import keras

from kerasbert.families.bert.bert_backbone import BertBackbone


@keras.saving.register_keras_serializable(package="kerasbert")
class RobertaBackbone(BertBackbone):
    """RoBERTa (Liu et al., 2019) as a `BertBackbone`: the same blocks and pooler, other positions.

    Positions count the tokens other than `padding_token_id`, from `padding_token_id + 1` on; padding
    tokens get `padding_token_id` (HF `create_position_ids_from_input_ids`). So the position table has
    `padding_token_id + 1` more rows than the longest input (514 for 512 tokens), and a `padding_mask`
    must agree with the padding ids in `token_ids`. `pooled_output` is HF `RobertaModel`'s pooler (dense +
    tanh on `<s>`). Defaults are roberta-base's; other arguments are `BertBackbone`'s.

    Examples:
        >>> backbone = RobertaBackbone.from_preset("roberta_base", load_weights=False)
        >>> backbone.count_params()
        124645632
    """

    family = "roberta"

    def __init__(self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, padding_token_id=1,
                 **kwargs):
        if isinstance(padding_token_id, bool) or not isinstance(padding_token_id, int):
            raise ValueError(f"RobertaBackbone needs padding_token_id, the id its positions count from (1 in "
                             f"roberta-base), got {padding_token_id!r}.")
        roberta = {"max_sequence_length": 514, "num_segments": 1, "layer_norm_epsilon": 1e-5}  # not BERT's defaults
        super().__init__(vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
                         padding_token_id=padding_token_id, **{**roberta, **kwargs})
