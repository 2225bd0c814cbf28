"""kerasbert: the BERT toolkit for Keras 3.

`import kerasbert` imports every subpackage (TensorFlow quietly, see `_quiet_start`), which also registers
the Keras classes that `keras.saving.load_model` needs. In the `kerasbert` command's own process, and where
TensorFlow is not installed, the names load on first use instead: `kerasbert --help` answers without
TensorFlow, and the layers (`kerasbert.layers`, keras.ops only) run on JAX or torch alone.

Examples:
    >>> import kerasbert as kb
    >>> backbone = kb.BertBackbone.from_preset("all_minilm_l6_v2_en")
"""

import importlib
import importlib.util
import os
import sys

__version__ = "0.1.0"

SUBPACKAGES = ("data", "deployment", "distillation", "families", "fine_tuning", "generation", "layers", "metrics",
               "plots", "presets", "retrieval", "serving", "tasks", "tokenizers", "training")
EXPORTS = {
    "tasks": ("BertClassifier", "BertCrossEncoder", "BertMaskedLM", "BertMultipleChoice", "BertMultiTask", "BertPretrainer",
              "BertQuestionAnswerer", "BertSeq2Seq", "BertTextEncoder", "BertTokenClassifier", "DebertaV3Pretrainer",
              "ElectraPretrainer",
              "LongInputs", "MemoryReader", "TargetTooLongError", "load_task"),
    "distillation": ("Distiller", "student_from_teacher"),
    "layers": ("MaskedLMHead", "MultiHeadSelfAttention", "NSPHead", "ReplacedTokenHead",
               "TokenSegmentPositionEmbedding", "TransformerEncoderBlock", "XLNetLMHead"),
    "families": ("AlbertBackbone", "AlbertTokenizer", "BertBackbone", "BertPreprocessor", "BertTokenizer", "BigBirdBackbone",
                 "BigBirdTokenizer",
                 "DebertaGenerator", "DebertaV2Backbone", "DebertaV2Tokenizer", "DistilBertBackbone", "ElectraBackbone", "ElectraGenerator",
                 "LongformerBackbone", "MobileBertBackbone", "ModernBertBackbone", "ReformerBackbone", "RobertaBackbone",
                 "RobertaPacker", "RobertaTokenizer", "XLNetBackbone",
                 "XLNetPacker", "XLNetTokenizer",
                 "backbone_class_for", "tokenizer_from_preset"),
    "tokenizers": ("BertPacker", "TokenizerJsonError"),
    "fine_tuning": ("FineTuningConfig",),
    "data": ("MaskingConfig",),
}
HOME_OF = {name: package for package, names in EXPORTS.items() for name in names}


def __getattr__(name):
    if name in SUBPACKAGES:
        return importlib.import_module(f"kerasbert.{name}")
    if name in HOME_OF:
        return getattr(importlib.import_module(f"kerasbert.{HOME_OF[name]}"), name)
    raise AttributeError(f"module 'kerasbert' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *SUBPACKAGES, *HOME_OF])


def started_as_the_command():
    """True in the process of the `kerasbert` console script (its commands import what they need)."""
    return bool(sys.argv) and os.path.basename(sys.argv[0]) == "kerasbert"


if not started_as_the_command() and importlib.util.find_spec("tensorflow") is not None:
    for _subpackage in SUBPACKAGES:
        if _subpackage not in ("plots", "serving"):  # optional extras: imported when used
            globals()[_subpackage] = importlib.import_module(f"kerasbert.{_subpackage}")
