"""TokenizerBase: what kerasbert's tokenizer layers share (raw-string inputs, token <-> id lookups, batching
texts of any shape into rows)."""

from collections.abc import Mapping

import numpy as np
import tensorflow as tf

from kerasbert.presets.loading import load_tokenizer
from kerasbert.tokenizers.string_inputs import to_string_tensor

LAYER_KEYS = ("name", "trainable", "dtype")  # Keras layer settings, not the tokenizer's


class TokenizerBase:
    """Mixed in before `keras.layers.Layer` by `BertTokenizer`, `RobertaTokenizer` and `AlbertTokenizer`.

    The layer takes raw Python or `tf.string` texts of any shape. A subclass keeps `_token_ids` ({token: id}),
    `_vocabulary` (the tokens in id order; None until its assets load), `default_special_tokens` (the defaults
    of `unk_token`, `cls_token`, `sep_token`, `pad_token`, `mask_token`), and the traced functions
    `_tokenize_rows(texts)` / `_tokenize_rows_with_offsets(texts)` over a 1-D batch of texts. For presets it
    says `packer_class` (how its model packs texts), `write_files(folder)` (its files under their HF names),
    `hf_tokenizer_config()` and `word_start_marker` (the mark of a piece that starts a word, or None when
    the mark is on the pieces that continue one, `continuation_marker`).

    Examples:
        >>> class MyTokenizer(TokenizerBase, keras.layers.Layer): ...
        >>> MyTokenizer(...).token_to_id("[CLS]")
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # Inputs stay tf.string tensors (not backend tensors), and raw Python strings are allowed.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    word_start_marker = None
    continuation_marker = None
    # A subclass's special tokens by argument name, and what a tokenizer made from a config alone lacks (its
    # assets in a `.keras` file) and the call that gives it.
    default_special_tokens = {}
    config_names = ()  # the constructor settings kept as attributes of the same name (`get_config` saves them)
    vocabulary_files = "vocabulary"
    set_vocabulary_call = "set_vocabulary(...)"

    @classmethod
    def upgrade_settings(cls, settings):
        """Settings saved with one key per special token (`unk_token`, ...: `.keras` files and preset folders of an
        earlier kerasbert) -> today's `special_tokens`."""
        legacy = [name for name in cls.default_special_tokens if name in settings]
        if not legacy:
            return settings
        settings = dict(settings)
        settings["special_tokens"] = {**{name: settings.pop(name) for name in legacy},
                                      **(settings.get("special_tokens") or {})}
        return settings

    @classmethod
    def from_config(cls, config):
        return cls(**cls.upgrade_settings(config))

    def get_config(self):
        return {**super().get_config(), **{name: getattr(self, name) for name in self.config_names},
                "special_tokens": self.special_tokens()}

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """The tokenizer of a preset name or checkpoint folder: its files and settings.

        Examples:
            >>> RobertaTokenizer.from_preset("my_roberta_folder")  # doctest: +SKIP
        """
        return load_tokenizer(preset, cls=cls, **kwargs)

    def folder_settings(self):
        """The constructor settings a preset folder keeps beside the files (`kerasbert.json`)."""
        return {key: value for key, value in self.get_config().items() if key not in LAYER_KEYS}

    def tokenize_words(self, words):
        """Ids of each word of pre-split text (a 1-D batch), cut as inside a sentence (HF
        `is_split_into_words=True`)."""
        return self.tokenize(words)

    def continuation_flags(self):
        """A bool per vocabulary id: True for pieces that continue a word (BERT's `##...`; in RoBERTa and
        ALBERT a piece without the word-start mark `Ġ` / `▁`). Special tokens start words.

        Examples:
            >>> tokenizer.continuation_flags()[tokenizer.token_to_id("##s")]  # doctest: +SKIP
            True
        """
        vocabulary = self.get_vocabulary()
        if self.continuation_marker is not None:
            flags = [token.startswith(self.continuation_marker) for token in vocabulary]
        else:
            flags = [not token.startswith(self.word_start_marker) for token in vocabulary]
        flags = np.array(flags, dtype=bool)
        flags[[self.token_to_id(token) for token in self.special_tokens().values()]] = False
        return flags

    def set_special_tokens(self, special_tokens=None):
        """Keep the five special tokens (`unk_token`, `cls_token`, `sep_token`, `pad_token`, `mask_token`): the
        class's defaults, with those in `special_tokens` in their place, each checked to be a non-empty string (a
        TypeError or ValueError naming it otherwise).

        Examples:
            >>> BertTokenizer(vocabulary, special_tokens={"unk_token": "<unk>", "pad_token": "<pad>"})
        """
        if special_tokens is None:
            special_tokens = {}
        if not isinstance(special_tokens, Mapping):
            raise TypeError(f"special_tokens must be a dict such as {{'unk_token': "
                            f"{self.default_special_tokens['unk_token']!r}}}, got {type(special_tokens).__name__}.")
        unknown = sorted(set(special_tokens) - set(self.default_special_tokens))
        if unknown:
            raise ValueError(f"special_tokens has {unknown}; it names {list(self.default_special_tokens)}.")
        for name, default in self.default_special_tokens.items():
            token = special_tokens.get(name, default)
            wanted = f"{name} must be a token of the vocabulary, a string such as {default!r}"
            if not isinstance(token, str):
                raise TypeError(f"{wanted}; got {type(token).__name__} {token!r}.")
            if not token.strip():
                raise ValueError(f"{wanted}; got {token!r}.")
            setattr(self, name, token)

    def special_tokens(self):
        """The special tokens by argument name, e.g. `{"unk_token": "[UNK]", ...}`."""
        return {
            "unk_token": self.unk_token,
            "cls_token": self.cls_token,
            "sep_token": self.sep_token,
            "pad_token": self.pad_token,
            "mask_token": self.mask_token,
        }

    # Vocabulary.

    @property
    def has_vocabulary(self):
        return self._vocabulary is not None

    def check_no_vocabulary_yet(self):
        """A ValueError when the vocabulary is set already: its ids are fixed, once."""
        if self._vocabulary is not None:
            name = type(self).__name__
            raise ValueError(f"This {name} already has a {self.vocabulary_files}; its ids are fixed. Make a new "
                             f"{name} for another.")

    def _checked_vocabulary(self):
        """The tokens in id order, or a ValueError saying how to give a tokenizer made from a config its assets."""
        if self._vocabulary is None:
            raise ValueError(
                f"{type(self).__name__} '{self.name}' has no {self.vocabulary_files}: it was made from a config alone "
                f"(the {self.vocabulary_files} travel beside the config, as assets of the `.keras` file). Load the "
                f"model with keras.saving.load_model, or call {self.set_vocabulary_call}."
            )
        return self._vocabulary

    def vocabulary_size(self):
        return len(self._checked_vocabulary())

    def get_vocabulary(self):
        return list(self._checked_vocabulary())

    def detokenize(self, ids):
        """Text from ids, as HF's `decode` (the family's `join_tokens(id_rows)`). A row of ids gives a string; a
        batch gives one per row.

        Examples:
            >>> tokenizer.detokenize([101, 7592, 102]).numpy()
            b'[CLS] hello [SEP]'
        """
        ids = to_int_ids(ids)
        if ids.shape.rank == 1:
            return self.detokenize(ids[tf.newaxis])[0]
        return self.join_tokens(self.checked_id_rows(ids))

    def checked_id_rows(self, ids):
        """A batch of ids (an int32 Tensor or RaggedTensor `[rows, ...]`) as a RaggedTensor of rows; run eagerly,
        a ValueError when an id is outside the vocabulary (`detokenize`'s first step).

        Examples:
            >>> tokenizer.checked_id_rows(to_int_ids([[101, 7592], [102]])).row_lengths().numpy().tolist()
            [2, 1]
        """
        vocabulary_size = len(self._checked_vocabulary())
        if isinstance(ids, tf.Tensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        if tf.executing_eagerly() and tf.size(ids.flat_values) > 0:
            low, high = int(tf.reduce_min(ids.flat_values)), int(tf.reduce_max(ids.flat_values))
            if low < 0 or high >= vocabulary_size:
                raise ValueError(f"Ids must be in [0, {vocabulary_size}), got ids from {low} to {high}.")
        return ids

    def token_to_id(self, token):
        self._checked_vocabulary()
        if token not in self._token_ids:
            raise ValueError(f"Token {token!r} is not in the vocabulary.")
        return self._token_ids[token]

    def id_to_token(self, token_id):
        vocabulary = self._checked_vocabulary()
        if not 0 <= int(token_id) < len(vocabulary):
            raise ValueError(f"Id {token_id} is out of the vocabulary's range [0, {len(vocabulary)}).")
        return vocabulary[int(token_id)]

    @property
    def unk_token_id(self):
        return self.token_to_id(self.unk_token)

    @property
    def cls_token_id(self):
        return self.token_to_id(self.cls_token)

    @property
    def sep_token_id(self):
        return self.token_to_id(self.sep_token)

    @property
    def pad_token_id(self):
        return self.token_to_id(self.pad_token)

    @property
    def mask_token_id(self):
        return self.token_to_id(self.mask_token)

    # Tokenising.

    def call(self, texts):
        return self.tokenize(texts)

    def tokenize(self, texts):
        """Token ids (int32 `tf.RaggedTensor`, one row per text; a scalar string gives one row)."""
        return self.per_text(self._tokenize_rows, texts)

    def per_text(self, rows_function, texts):
        """`rows_function` (1-D texts -> ragged rows, or a tuple of them) on texts of any shape, the result
        shaped like `texts` (a scalar gives one row, N-D nested rows)."""
        self._checked_vocabulary()
        texts = to_string_tensor(texts, type(self).__name__)
        if isinstance(texts, tf.RaggedTensor):
            outputs = self.per_text(rows_function, texts.flat_values)
            return tuple(texts.with_flat_values(o) for o in outputs) if isinstance(outputs, tuple) \
                else texts.with_flat_values(outputs)
        outputs = rows_function(tf.reshape(texts, [-1]))
        if isinstance(outputs, tuple):
            return tuple(restore_outer_shape(output, texts) for output in outputs)
        return restore_outer_shape(outputs, texts)


def restore_outer_shape(rows, texts):
    """Gives the one-row-per-text result the shape of `texts` (scalar -> one row, N-D -> nested)."""
    if texts.shape.rank == 0:
        return rows[0]
    for axis in reversed(range(1, texts.shape.rank)):
        rows = tf.RaggedTensor.from_uniform_row_length(rows, tf.shape(texts, out_type=tf.int64)[axis])
    return rows


def to_int_ids(ids):
    """Ids as an int32 Tensor or RaggedTensor (nested lists may have rows of different lengths)."""
    if isinstance(ids, (tf.Tensor, tf.RaggedTensor)):
        return tf.cast(ids, tf.int32)
    if isinstance(ids, (list, tuple)):
        return tf.ragged.constant(ids, dtype=tf.int32)
    return tf.constant(np.asarray(ids), tf.int32)
