"""Where each model family's HF checkpoints keep their masked-LM head, as data.

HF's masked-LM heads are one design, dense -> activation -> LayerNorm -> decoder tied to the word
embeddings + a bias, under other names per family. The dense maps to the width of the tied embedding table
(`MaskedLMHead(transform_dim=...)`): the hidden width in BERT, RoBERTa and DistilBERT, the narrower
embedding width in ALBERT and the ELECTRA generator. RoBERTa and the ELECTRA generator fix the exact GELU
whatever the config says; ModernBERT's head has a dense bias and a LayerNorm beta only with HF `classifier_bias`
and `norm_bias` (its backbone's); DeBERTa-v2/v3's is under `lm_predictions.lm_head.*` (the published checkpoints, HF `legacy=False`) or
BERT's `cls.predictions.*` (HF's `legacy=True` default). Facts read from transformers 5.24 (`BertLMPredictionHead`, `RobertaLMHead`, `AlbertMLMHead`,
`DistilBertForMaskedLM`, `ElectraGeneratorPredictions` + `generator_lm_head`, `ModernBertPredictionHead` +
`ModernBertForMaskedLM.decoder`).

Examples:
    >>> masked_lm_head_names("roberta").bias, masked_lm_head_names("roberta").activation
    ('lm_head.bias', 'gelu')
"""

import dataclasses

from kerasbert.families.family import family_named


def masked_lm_sequence(outputs):
    """The backbone output (of `outputs`, a backbone's output dict) that a masked-LM head reads: DeBERTa's enhanced
    mask decoder's `mask_decoder_output` where the backbone has one, else `sequence_output`.

    Examples:
        >>> masked_lm_sequence({"sequence_output": x, "pooled_output": pooled}) is x
        True
    """
    return outputs.get("mask_decoder_output", outputs["sequence_output"])


@dataclasses.dataclass(frozen=True)
class MaskedLMHeadNames:
    """One family's masked-LM head in HF checkpoints (names after the base-model prefix is stripped).

    prefix: what every head weight name starts with (`Checkpoint.heads(prefix)`; a tuple where the head's
    weights sit under two names, as ModernBERT's `head.*` and `decoder.*`). dense, layer_norm: the
    transform's Linear and LayerNorm. bias: the output bias. decoder: the decoder Linear, whose weight HF
    ties to the word embeddings (written only for an untied head). activation: fixed by the family
    ("gelu", exact), or None for the backbone's own. hf_class: the HF model holding the head. dense_bias:
    whether the dense has a bias (where the backbone has no `classifier_bias` of its own, as ModernBERT's); the
    LayerNorm's beta follows the backbone's `norm_bias` where it has one.
    """

    prefix: str | tuple
    dense: str
    layer_norm: str
    bias: str
    decoder: str
    activation: str | None
    hf_class: str
    dense_bias: bool = True
    alternative: "MaskedLMHeadNames | None" = None


def masked_lm_head_names(family):
    """The `MaskedLMHeadNames` of `family` (an HF model_type), or an error listing the known families, or a
    ValueError for a family whose HF head kerasbert cannot hold (its `masked_lm_head` is None: MobileBERT).

    Examples:
        >>> masked_lm_head_names("albert").dense
        'predictions.dense'
    """
    head = family_named(family).masked_lm_head
    if head is None:
        raise ValueError(f"kerasbert has no masked-LM head of the {family} family: HF's is not the design that "
                         f"MaskedLMHead holds (see kerasbert.families.{family}). Use the family's other task models.")
    return head
