"""What every checkpoint reader returns: config, weights and vocabulary, format-free."""

import dataclasses
from pathlib import Path


class CheckpointError(ValueError):
    """A checkpoint file is missing, corrupt, or does not match its config."""


class UnsupportedModelTypeError(CheckpointError):
    """A checkpoint of a model type (HF `model_type`) that kerasbert does not read."""


class FamilyMismatchError(CheckpointError):
    """Weights of another model family than their config says, or than the backbone class loading them."""


# The tokenizer files of each family's checkpoint folder, registered with the family (`register_hf_family`).
TOKENIZER_FILES = {}
TOKENIZER_KINDS = {"vocab.txt": "WordPiece vocabulary", "vocab.json": "byte-level BPE vocabulary",
                   "merges.txt": "byte-level BPE merges", "spiece.model": "SentencePiece model",
                   "spm.model": "SentencePiece model"}


def tokenizer_location(folder, family):
    """Where a tokenizer of `family` reads its files in `folder`: the one file (`vocab.txt`, `spiece.model`), the
    folder itself for RoBERTa's two files, else the folder's `tokenizer.json` (transformers 5 saves that alone),
    or None when none is there.

    Examples:
        >>> tokenizer_location(Path("roberta-base"), "roberta")
        PosixPath('roberta-base')
    """
    files = TOKENIZER_FILES[family or "bert"]
    if not all((Path(folder) / name).is_file() for name in files):
        fast = Path(folder) / "tokenizer.json"
        return fast if fast.is_file() else None
    return Path(folder) / files[0] if len(files) == 1 else Path(folder)


@dataclasses.dataclass
class Checkpoint:
    """A checkpoint read from disk, independent of its original format.

    Attributes:
        source: the file or folder it came from (for error messages).
        format: "hf", "google" or "kerasbert".
        backbone_config: `BertBackbone` keyword arguments.
        tokenizer_config: keyword arguments of the family's tokenizer except its files (`BertTokenizer`:
            `lowercase`, `strip_accents`, `tokenize_chinese_chars`; `RobertaTokenizer`: `add_prefix_space`, ...;
            `AlbertTokenizer`: `do_lower_case`, `keep_accents`, ...); None for a built-in preset whose settings are
            its files' (read when the tokenizer is built).
        vocabulary_path: where the tokenizer's files are (`tokenizer_location`: `vocab.txt`, `spiece.model`, or
            the folder of RoBERTa's `vocab.json` and `merges.txt`), or None when the folder lacks them.
        state_dict: weights under HF BERT names in torch layout (hf and google formats),
            including task heads (`cls.predictions.*`, `cls.seq_relationship.*`,
            `classifier.*`, `qa_outputs.*`) when present; for a kerasbert preset only its
            task heads (`heads.safetensors`); None if weights were not loaded.
        keras_weights_path: the `model.weights.h5` of a kerasbert preset.
        id2label: class names of a fine-tuned HF head, if the config has them.
        task_config: the application config saved in a kerasbert preset, if any.
        architectures: the HF model classes the checkpoint was saved from (e.g.
            "BertForSequenceClassification"), which tell apart heads that share names.
        family: the model family, an HF `model_type` ("bert", "albert", "roberta", "distilbert",
            "electra"), which picks the backbone class (`kerasbert.families.backbone_class_for`); None when
            the files do not say (a kerasbert preset: the class that loads it decides).
    """

    source: str
    format: str
    backbone_config: dict
    tokenizer_config: dict | None
    vocabulary_path: Path | None = None
    state_dict: dict | None = None
    keras_weights_path: Path | None = None
    id2label: dict | None = None
    task_config: dict | None = None
    architectures: tuple = ()
    family: str | None = None

    def heads(self, prefix, architecture=None):
        """The head weights whose names start with `prefix`, e.g. "cls.predictions.".

        With `architecture` (e.g. "BertForTokenClassification"), only when the checkpoint was
        saved from that HF class (or does not say): `classifier.*` means different heads in
        sequence, token and multiple-choice classifiers.
        """
        if architecture and self.architectures and architecture not in self.architectures:
            return {}
        return {k: v for k, v in (self.state_dict or {}).items() if k.startswith(prefix)}

    def require_vocabulary(self):
        """The tokenizer files' location, or a clear error naming the files the checkpoint lacks."""
        if self.vocabulary_path is None or not Path(self.vocabulary_path).exists():
            files = TOKENIZER_FILES[self.family or "bert"]
            folder = Path(self.source)
            missing = [name for name in files if not (folder / name).is_file()] if folder.is_dir() else files
            described = " and ".join(f"{name} (the {TOKENIZER_KINDS[name]})" for name in missing)
            raise FileNotFoundError(
                f"No {' and no '.join(missing)} in {self.source}: a {self.family or 'bert'} tokenizer needs "
                f"{described} its checkpoint was trained with. Copy the checkpoint's tokenizer files into that "
                "folder."
            )
        return Path(self.vocabulary_path)
