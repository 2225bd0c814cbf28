"""Family: all kerasbert knows of one model family, and the registry of families.

Each folder `kerasbert/families/<name>/` defines one `Family` (its backbone and tokenizer classes and its HF
names as data), and `kerasbert/families/__init__.py` registers it with one line; every lookup by model type
(`backbone_class_for`, `tokenizer_from_preset`, checkpoint readers and writers, weight names, masked-LM heads)
reads the registry.

Examples:
    >>> family_named("roberta").backbone.__name__
    'RobertaBackbone'
    >>> backbone = backbone_class_for(load_checkpoint("my_roberta_folder")).from_checkpoint(...)
"""

import dataclasses

from kerasbert.presets.checkpoint import UnsupportedModelTypeError
from kerasbert.presets.hf_families import register_hf_family
from kerasbert.presets.loading import load_checkpoint, load_tokenizer


@dataclasses.dataclass(frozen=True)
class Family:
    """One model family.

    Attributes:
        name: its HF `model_type` ("bert", "roberta", ...).
        backbone: its backbone class (a `BertBackbone` subclass, or a family's own: `MobileBertBackbone`,
            `XLNetBackbone`).
        tokenizer: its tokenizer class (None: none yet, DeBERTa-v2's).
        checkpoint: how HF config keys map onto the backbone, and its checkpoint files (`HfFamily`).
        weights: where HF keeps each weight (`HfNames`, or a family's own links as MobileBERT's; None: the family
            links its weights itself, as XLNet's `xlnet_weights.py`).
        masked_lm_head: where HF keeps its masked-LM head (`MaskedLMHeadNames`); None where `MaskedLMHead`
            cannot hold HF's head (MobileBERT) or the family has none of that kind (XLNet).
    """

    name: str
    backbone: type
    tokenizer: type
    checkpoint: object
    weights: object
    masked_lm_head: object


FAMILIES = {}


def register(family):
    """Make `family` known to every lookup by model type, the checkpoint readers and writers included."""
    FAMILIES[family.name] = family
    register_hf_family(family.name, family.checkpoint)
    return family


def family_named(name):
    """The registered `Family` of model type `name`, or an `UnsupportedModelTypeError` listing the known ones."""
    if name not in FAMILIES:
        raise UnsupportedModelTypeError(f"kerasbert has no {name!r} family; it knows "
                                        f"{', '.join(sorted(FAMILIES))}.")
    return FAMILIES[name]


def backbone_class_for(checkpoint):
    """The backbone class of a `kerasbert.presets.Checkpoint`'s family (`BertBackbone` when it does not say)."""
    return family_named(checkpoint.family or "bert").backbone


def tokenizer_from_preset(preset, **overrides):
    """The tokenizer of `preset`'s family (a built-in name or a checkpoint folder), with its settings.

    Examples:
        >>> type(tokenizer_from_preset("my_roberta_folder")).__name__  # doctest: +SKIP
        'RobertaTokenizer'
    """
    family = family_named(load_checkpoint(preset, load_weights=False).family or "bert")
    if family.tokenizer is None:
        raise UnsupportedModelTypeError(f"kerasbert has no {family.name} tokenizer yet: build the "
                                        f"{family.backbone.__name__} alone and tokenise with HF's tokenizer.")
    return load_tokenizer(preset, family.tokenizer, **overrides)
