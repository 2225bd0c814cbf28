"""Which tokenizer each model family uses, and loading it from a preset."""

from kerasbert.families.albert.albert_tokenizer import AlbertTokenizer
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.families.roberta.roberta_tokenizer import RobertaTokenizer
from kerasbert.presets.loading import load_checkpoint, load_tokenizer

# HF model_type -> tokenizer class (DistilBERT and ELECTRA use BERT's WordPiece).
TOKENIZER_CLASSES = {"bert": BertTokenizer, "distilbert": BertTokenizer, "electra": BertTokenizer,
                     "roberta": RobertaTokenizer, "albert": AlbertTokenizer}


def tokenizer_from_preset(preset, **overrides):
    """The tokenizer of `preset`'s family (a built-in name or a checkpoint folder), with its settings.

    Examples:
        >>> type(tokenizer_from_preset("my_roberta_folder")).__name__  # doctest: +SKIP
        'RobertaTokenizer'
    """
    family = load_checkpoint(preset, load_weights=False).family or "bert"
    return load_tokenizer(preset, TOKENIZER_CLASSES[family], **overrides)
