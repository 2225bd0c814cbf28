"""Where each model family's HF checkpoints keep their masked-LM head, as data.

HF's masked-LM heads are one design, dense -> activation -> LayerNorm -> decoder tied to the word
embeddings + a bias, under other names per family. The dense maps to the width of the tied embedding table
(`MaskedLMHead(transform_dim=...)`): the hidden width in BERT, RoBERTa and DistilBERT, the narrower
embedding width in ALBERT and the ELECTRA generator. RoBERTa and the ELECTRA generator fix the exact GELU
whatever the config says. Facts read from transformers 5.24 (`BertLMPredictionHead`, `RobertaLMHead`,
`AlbertMLMHead`, `DistilBertForMaskedLM`, `ElectraGeneratorPredictions` + `generator_lm_head`).

Examples:
    >>> MASKED_LM_HEADS["roberta"].bias, MASKED_LM_HEADS["roberta"].activation
    ('lm_head.bias', 'gelu')
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class MaskedLMHeadNames:
    """One family's masked-LM head in HF checkpoints (names after the base-model prefix is stripped).

    prefix: what every head weight name starts with (`Checkpoint.heads(prefix)`). dense, layer_norm: the
    transform's Linear and LayerNorm. bias: the output bias. decoder: the decoder Linear, whose weight HF
    ties to the word embeddings (written only for an untied head). activation: fixed by the family
    ("gelu", exact), or None for the backbone's own. hf_class: the HF model holding the head.
    """

    prefix: str
    dense: str
    layer_norm: str
    bias: str
    decoder: str
    activation: str | None
    hf_class: str


MASKED_LM_HEADS = {
    "bert": MaskedLMHeadNames("cls.predictions.", "cls.predictions.transform.dense",
                              "cls.predictions.transform.LayerNorm", "cls.predictions.bias",
                              "cls.predictions.decoder", None, "BertForMaskedLM"),
    "roberta": MaskedLMHeadNames("lm_head.", "lm_head.dense", "lm_head.layer_norm", "lm_head.bias",
                                 "lm_head.decoder", "gelu", "RobertaForMaskedLM"),
    "albert": MaskedLMHeadNames("predictions.", "predictions.dense", "predictions.LayerNorm", "predictions.bias",
                                "predictions.decoder", None, "AlbertForMaskedLM"),
    "distilbert": MaskedLMHeadNames("vocab_", "vocab_transform", "vocab_layer_norm", "vocab_projector.bias",
                                    "vocab_projector", None, "DistilBertForMaskedLM"),
    "electra": MaskedLMHeadNames("generator_", "generator_predictions.dense", "generator_predictions.LayerNorm",
                                 "generator_lm_head.bias", "generator_lm_head", "gelu", "ElectraForMaskedLM"),
}
# ELECTRA's discriminator head (`ReplacedTokenHead`) in HF `ElectraForPreTraining`; its activation is hidden_act.
REPLACED_TOKEN_HEAD = "discriminator_predictions"


def masked_lm_head_names(family):
    """The `MaskedLMHeadNames` of `family` (an HF model_type), or a ValueError listing the known ones.

    Examples:
        >>> masked_lm_head_names("albert").dense
        'predictions.dense'
    """
    if family not in MASKED_LM_HEADS:
        raise ValueError(f"No masked-LM head is known for the {family!r} family; kerasbert knows "
                         f"{', '.join(sorted(MASKED_LM_HEADS))}.")
    return MASKED_LM_HEADS[family]
