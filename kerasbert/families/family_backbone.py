"""FamilyBackbone: what the families with backbones of their own (MobileBERT, DeBERTa, ModernBERT, Longformer,
Reformer) share with `BertBackbone`'s file handling: `from_preset`, `from_checkpoint`, `save_to_preset` and
`export_to_hf`.

A subclass builds its functional graph in `__init__`, names its HF `model_type` in `family` and its constructor's
arguments in `config_names` (kept by `keep_config(locals())`, returned by `get_config`), and registers a `Family`
whose weight links read and write its weights.

Examples:
    >>> backbone = MobileBertBackbone.from_preset("my_mobilebert_folder")
    >>> backbone.export_to_hf("hf_mobilebert", tokenizer=tokenizer)
"""

import warnings

import keras

from kerasbert.families.bert.bert_backbone import check_checkpoint_family, check_tokenizer_fits
from kerasbert.families.checkpoint_weights import apply_checkpoint, assign_links, dense_links, export_hf_weights
from kerasbert.families.hf_expressible import check_hf_expressible
from kerasbert.presets.hf_format import write_hf_folder
from kerasbert.presets.kerasbert_format import write_kerasbert_folder
from kerasbert.presets.loading import load_checkpoint


class FamilyBackbone:
    """A family's own backbone: BERT's inputs and outputs, its own layers (see the module docstring). A mixin
    before `keras.Model` (`class MyBackbone(FamilyBackbone, keras.Model)`), not a `keras.Model` subclass: Keras
    turns the bases of a class built as a functional model into `Functional`, which would turn a subclassed
    family (Reformer) built later in the same process into one too."""

    family = None  # the HF model_type whose checkpoints name the subclass's weights
    config_names = ()  # the constructor's arguments that `get_config` returns
    # (HF name, HF class or None) of a Linear that HF keeps in a fine-tuned task model's head and kerasbert in the
    # pooler (DeBERTa's `ContextPooler`, Longformer's classification head): loaded into `pooler` when present.
    task_pooler = None

    def keep_config(self, arguments):
        """Keep `arguments[name]` as `self.<name>` for each of `config_names` (`arguments`: the constructor's
        `locals()`), and mark the backbone as one without adapters, LoRA updates or shared blocks (what the
        fine-tuning modes and distillation read)."""
        for name in self.config_names:
            setattr(self, name, arguments[name])
        self.adapter_size = self.lora_rank = None
        self.num_block_groups, self.blocks_per_group = None, 1  # every layer its own block

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.dtype_policies.serialize(self.token_embedding.dtype_policy),
                **{name: getattr(self, name) for name in self.config_names}}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, load_weights=True, allow_pickle=False, **overrides):
        """Build the backbone of `preset` (an HF folder of this family, a kerasbert preset folder or
        `hf://org/name`) and load its weights; `overrides` replace config values (see `BertBackbone.from_preset`).
        """
        return cls.from_checkpoint(load_checkpoint(preset, load_weights, allow_pickle), **overrides)

    @classmethod
    def from_checkpoint(cls, checkpoint, **overrides):
        """Build from a `kerasbert.presets.Checkpoint`, loading its weights if it carries any; a checkpoint of
        another family is a `FamilyMismatchError` naming it."""
        check_checkpoint_family(checkpoint, cls)
        backbone = cls(**{**checkpoint.backbone_config, **overrides})
        name, architecture = cls.task_pooler or (None, None)
        pooler = checkpoint.heads(f"{name}.", architecture) if name else {}
        if checkpoint.state_dict is not None or checkpoint.keras_weights_path is not None:
            with warnings.catch_warnings():
                if pooler:  # the base model's own pooler may be missing: the task model's takes its place below
                    warnings.filterwarnings("ignore", message=".*the pooler keeps its fresh initialisation")
                apply_checkpoint(backbone, checkpoint)
        if pooler:
            assign_links(dense_links(backbone.pooler, name), pooler, checkpoint.source)
        return backbone

    def save_to_preset(self, folder, tokenizer=None, format="kerasbert", allow_lossy=False):
        """Write a preset folder that `from_preset` reads: `format="kerasbert"` or `"hf"` (as `export_to_hf`)."""
        if format == "hf":
            return self.export_to_hf(folder, tokenizer, allow_lossy=allow_lossy)
        if format != "kerasbert":
            raise ValueError(f"format={format!r}: use 'kerasbert' or 'hf' (HF transformers).")
        check_tokenizer_fits(self, tokenizer)
        return write_kerasbert_folder(folder, self, tokenizer)

    def export_to_hf(self, folder, tokenizer=None, heads=None, id2label=None, allow_lossy=False):
        """Write an HF folder of this family (`config.json`, `model.safetensors`, the tokenizer's files) that
        `transformers.AutoModel` loads; a changed block or embedding is refused (see `BertBackbone.export_to_hf`).
        """
        if heads or id2label:
            raise ValueError(f"Task heads are written to HF folders of BERT only; this is a {self.family} "
                             "backbone. Export the backbone alone, or save the task with save_to_preset.")
        check_hf_expressible(self, allow_lossy)
        check_tokenizer_fits(self, tokenizer)
        return write_hf_folder(folder, self.get_config(), export_hf_weights(self), tokenizer, None, self.family)
