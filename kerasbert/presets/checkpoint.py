"""What every checkpoint reader returns: config, weights and vocabulary, format-free."""

import dataclasses
from pathlib import Path


class CheckpointError(ValueError):
    """A checkpoint file is missing, corrupt, or does not match its config."""


class UnsupportedModelTypeError(CheckpointError):
    """A checkpoint of a model type (HF `model_type`) that kerasbert does not read."""


class FamilyMismatchError(CheckpointError):
    """Weights of another model family than their config says, or than the backbone class loading them."""


@dataclasses.dataclass
class Checkpoint:
    """A checkpoint read from disk, independent of its original format.

    Attributes:
        source: the file or folder it came from (for error messages).
        format: "hf", "google" or "kerasbert".
        backbone_config: `BertBackbone` keyword arguments.
        tokenizer_config: `BertTokenizer` keyword arguments except the vocabulary
            (`lowercase`, `strip_accents`, `tokenize_chinese_chars`).
        vocabulary_path: the `vocab.txt`, or None when the folder has none.
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
            "electra"), which picks the backbone class (`kerasbert.models.backbone_class_for`); None when
            the files do not say (a kerasbert preset: the class that loads it decides).
    """

    source: str
    format: str
    backbone_config: dict
    tokenizer_config: dict
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
        """The vocabulary path, or a clear error when the checkpoint has none."""
        if self.vocabulary_path is None or not Path(self.vocabulary_path).is_file():
            raise FileNotFoundError(
                f"No vocab.txt in {self.source}: a BERT tokenizer needs the WordPiece "
                "vocabulary its checkpoint was trained with. Copy the checkpoint's vocab.txt "
                "into that folder."
            )
        return Path(self.vocabulary_path)
