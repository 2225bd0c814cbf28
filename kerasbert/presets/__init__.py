"""Preset registry and checkpoint readers/writers (kerasbert, HF and Google formats)."""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.presets.checkpoint import Checkpoint, CheckpointError
from kerasbert.presets.loading import load_checkpoint, load_tokenizer
from kerasbert.presets.registry import PRESETS, preset_names


def config(name):
    """The `BertBackbone` arguments of a built-in preset, as a new dict.

    Examples:
        >>> BertBackbone(**config("bert_small_en_uncased"), encoder_block=MyBlock)
    """
    if name not in PRESETS:
        raise ValueError(f"Unknown preset {name!r}; built-in presets: {preset_names()}.")
    return dict(PRESETS[name]["config"])
