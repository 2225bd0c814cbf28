"""BertPreprocessor: raw text (or text pairs) -> the backbone's input dict, for BERT and its family."""

import keras

from kerasbert.families.family import tokenizer_from_preset
from kerasbert.tokenizers.bert_packer import check_sequence_length
from kerasbert.tokenizers.string_inputs import to_string_tensor
from kerasbert.tokenizers.tokenizer_base import TokenizerBase


@keras.saving.register_keras_serializable(package="kerasbert")
class BertPreprocessor(keras.layers.Layer):
    """Tokenises texts with a kerasbert tokenizer and packs them as its model family does: `BertPacker`
    (`[CLS] A [SEP] B [SEP]`; BERT, ALBERT, DistilBERT, ELECTRA) or `RobertaPacker` (`<s> A </s></s> B </s>`).

    Call it with a batch of texts, or a tuple `(texts_a, texts_b)` of two batches for pairs (a
    list is always one batch of texts). A single string gives unbatched outputs. Returns the dict
    `token_ids`, `segment_ids`, `padding_mask`, equal to HF
    `tokenizer(a, b, truncation="longest_first", max_length=sequence_length, padding=...)`.

    Args:
        tokenizer: a `BertTokenizer`, `RobertaTokenizer` or `AlbertTokenizer` (its `packer_class` packs).
        sequence_length: the longest output, `[CLS]`/`[SEP]` included; longer inputs are truncated.
            `None`: no truncation.
        pad_to_sequence_length: pad to `sequence_length` (True) or to the longest in the batch
            (False, dynamic padding).

    Examples:
        >>> preprocessor = BertPreprocessor(BertTokenizer("vocab.txt"), sequence_length=8)  # doctest: +SKIP
        >>> preprocessor(("a question", "its context"))["segment_ids"]  # doctest: +SKIP
    """

    def __init__(self, tokenizer, sequence_length=512, pad_to_sequence_length=True, **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        if not isinstance(tokenizer, TokenizerBase):
            raise TypeError(f"`tokenizer` must be a kerasbert tokenizer (BertTokenizer, RobertaTokenizer, "
                            f"AlbertTokenizer), got {type(tokenizer).__name__}.")
        self.tokenizer = tokenizer
        self.sequence_length = check_sequence_length(sequence_length)
        self.pad_to_sequence_length = bool(pad_to_sequence_length)
        self._packer = None

    @property
    def packer(self):
        """The tokenizer's packer (`packer_class`) with its special ids, made at first use (a tokenizer read
        from a `.keras` file has its vocabulary only after its config)."""
        if self._packer is None:
            self._packer = self.tokenizer.packer_class(
                cls_token_id=self.tokenizer.cls_token_id,
                sep_token_id=self.tokenizer.sep_token_id,
                pad_token_id=self.tokenizer.pad_token_id,
                sequence_length=self.sequence_length,
                pad_to_sequence_length=self.pad_to_sequence_length,
            )
        return self._packer

    @classmethod
    def from_preset(cls, preset, sequence_length=512, pad_to_sequence_length=True, **tokenizer_kwargs):
        """The preprocessor of a preset name or checkpoint folder, with its family's tokenizer."""
        tokenizer = tokenizer_from_preset(preset, **tokenizer_kwargs)
        return cls(tokenizer, sequence_length=sequence_length, pad_to_sequence_length=pad_to_sequence_length)

    def call(self, texts):
        if isinstance(texts, tuple):
            if len(texts) != 2:
                raise ValueError(
                    f"A text pair is a tuple of two batches of texts, got a tuple of {len(texts)}."
                )
            segments = tuple(self.tokenizer(to_string_tensor(part, type(self).__name__)) for part in texts)
        else:
            segments = self.tokenizer(to_string_tensor(texts, type(self).__name__))
        return self.packer(segments)

    def compute_output_spec(self, texts):
        """The output dict's shapes from the input's, without running the tokenizer (a model that
        holds this layer is rebuilt from its config before the vocabulary asset is loaded)."""
        batch_shape = tuple((texts[0] if isinstance(texts, tuple) else texts).shape)
        shape = (*batch_shape, self.sequence_length if self.pad_to_sequence_length else None)
        return {
            "token_ids": keras.KerasTensor(shape, "int32"),
            "segment_ids": keras.KerasTensor(shape, "int32"),
            "padding_mask": keras.KerasTensor(shape, "bool"),
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
                "sequence_length": self.sequence_length,
                "pad_to_sequence_length": self.pad_to_sequence_length,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["tokenizer"] = keras.saving.deserialize_keras_object(config["tokenizer"])
        return cls(**config)
