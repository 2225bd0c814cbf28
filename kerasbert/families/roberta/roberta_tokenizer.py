"""RobertaTokenizer: RoBERTa's byte-level BPE, with the ids and offsets of HF's fast tokenizer, in TF ops."""

import json
import os

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from kerasbert.atomic_files import write_text_atomically
from kerasbert.families.roberta.byte_level_bpe import (
    MERGES_FILE,
    SPACE_CHARACTER,
    SPACES,
    VOCABULARY_FILE,
    WHITESPACE,
    WORD_PATTERN,
    WS,
    byte_length,
    bytes_to_unicode,
    interleave,
    missing_files,
    re2_literal,
    read_bpe_files,
    row_ids,
)
from kerasbert.families.roberta.roberta_packer import RobertaPacker, SingleSeparatorPacker
from kerasbert.tokenizers.string_inputs import to_string_tensor
from kerasbert.tokenizers.tokenizer_base import TokenizerBase


@keras.saving.register_keras_serializable(package="kerasbert")
class RobertaTokenizer(TokenizerBase, keras.layers.Layer):
    """Splits text into RoBERTa's byte-level BPE ids, exactly as HF's `RobertaTokenizerFast` does.

    Special tokens written in the text keep their ids (`<mask>` also takes the whitespace before it,
    as RoBERTa's own `tokenizer.json` says, unless `mask_token_lstrip=False`). The rest is cut by
    GPT-2's regular expression (contractions, letters, digits, other symbols, each with at most one
    space in front), written as bytes, and merged pair by pair in the order of `merges.txt`. No
    `<s>`/`</s>` is added: `RobertaPacker` does that. All of it is TensorFlow ops, so it runs in
    `tf.data` and in an exported SavedModel with only TensorFlow and tensorflow-text loaded.

    The vocabulary and merges are not part of `get_config()`: a `.keras` file stores them as the assets
    `vocab.json` and `merges.txt`. A tokenizer made from a config alone has none until `set_vocabulary`
    or `load_assets`.

    Args:
        vocabulary: a folder holding `vocab.json` and `merges.txt`, the path of `vocab.json`, or a
            `{token: id}` dict; None to set it later.
        merges: the path of `merges.txt`, or a list of merges (`"a b"` or `("a", "b")`).
        add_prefix_space: put a space before the text (and after each special token written in it), so
            that its first word is cut as any other.
        mask_token_lstrip: the mask token written in the text takes the whitespace before it.
        added_tokens: other tokens cut out of the text as the special tokens are (a `tokenizer.json`'s added
            tokens, e.g. ModernBERT's `<|padding|>`), each in the vocabulary.
        trim_offsets: leave the spaces at a token's ends out of its offsets, as HF's `RobertaProcessing` does
            (False: a `tokenizer.json` whose post-processor is a plain template, as ModernBERT's).
        special_tokens: the special tokens that differ from `default_special_tokens`, by name ("unk_token",
            "cls_token", "sep_token", "pad_token", "mask_token"); all must be in the vocabulary (`<s>` is also
            RoBERTa's bos, `</s>` its eos).
        pair_separators: separators between a pair's texts: 2 (RoBERTa's `</s></s>`, `RobertaPacker`) or 1
            (ModernBERT's `[SEP]`, `SingleSeparatorPacker`), as the `tokenizer.json` template says.

    Examples:
        >>> tokenizer = RobertaTokenizer("roberta-base")  # doctest: +SKIP
        >>> tokenizer(["Hello <mask>!"]).to_list()  # doctest: +SKIP
        [[31414, 50264, 328]]
        >>> tokenizer.detokenize([31414, 50264, 328])  # doctest: +SKIP
        <tf.Tensor: shape=(), dtype=string, numpy=b'Hello<mask>!'>
    """

    vocabulary_files = "vocabulary and merges"
    set_vocabulary_call = "set_vocabulary(folder)"
    default_special_tokens = {"unk_token": "<unk>", "cls_token": "<s>", "sep_token": "</s>", "pad_token": "<pad>",
                              "mask_token": "<mask>"}
    config_names = ("add_prefix_space", "mask_token_lstrip", "trim_offsets", "added_tokens", "pair_separators")

    def __init__(self, vocabulary=None, merges=None, add_prefix_space=False, mask_token_lstrip=True,
                 special_tokens=None, trim_offsets=True, added_tokens=(), pair_separators=2, **kwargs):
        super().__init__(**kwargs)
        if pair_separators not in (1, 2):
            raise ValueError(f"pair_separators={pair_separators!r}: a pair's texts are parted by 2 separators "
                             "(RoBERTa's </s></s>) or 1 (ModernBERT's [SEP]).")
        self.pair_separators = pair_separators
        self.add_prefix_space = bool(add_prefix_space)
        self.mask_token_lstrip = bool(mask_token_lstrip)
        self.trim_offsets = bool(trim_offsets)
        self.added_tokens = [str(token) for token in added_tokens]
        self.set_special_tokens(special_tokens)
        self._vocabulary = None
        if vocabulary is not None or merges is not None:
            self.set_vocabulary(vocabulary, merges)

    def set_vocabulary(self, vocabulary, merges=None):
        """Give a tokenizer made without them (e.g. from a config) its vocabulary and merges, in any
        form the constructor takes. They are set once; a tokenizer that has them keeps them.

        Examples:
            >>> tokenizer = RobertaTokenizer.from_config(config)  # doctest: +SKIP
            >>> tokenizer.set_vocabulary("vocab.json", "merges.txt")  # doctest: +SKIP
        """
        self.check_no_vocabulary_yet()
        token_ids, pairs = read_bpe_files(vocabulary, merges)
        tokens = sorted(token_ids, key=token_ids.get)
        if sorted(token_ids.values()) != list(range(len(tokens))):
            raise ValueError("The vocabulary's ids must be 0, 1, ..., size - 1, each given once.")
        byte_characters = bytes_to_unicode()
        missing = [f"{name}={t!r}" for name, t in self.special_tokens().items() if t not in token_ids]
        missing += [f"added token {t!r}" for t in self.added_tokens if t not in token_ids]
        missing += [f"byte {b:#04x} ({c!r})" for b, c in byte_characters.items() if c not in token_ids]
        if missing:
            raise ValueError(
                f"The vocabulary lacks {', '.join(missing)}. A byte-level BPE vocabulary has the 256 byte "
                "characters and the special tokens; pass the names yours uses (e.g. "
                "special_tokens={'unk_token': '[UNK]'})."
            )
        # left id * size + right id -> (rank, merged id); a merge listed twice keeps its last rank, as in HF
        merge_table = {}
        for rank, (left, right) in enumerate(pairs):
            for token in (left, right, left + right):
                if token not in token_ids:
                    raise ValueError(
                        f"Merge {rank + 1} ({left} {right}) makes or uses {token!r}, not in the vocabulary."
                    )
            merge_table[token_ids[left] * len(tokens) + token_ids[right]] = (rank, token_ids[left + right])
        keys = sorted(merge_table) or [-1]  # -1: no pair
        self._merge_keys = tf.constant(keys, tf.int64)
        self._merge_ranks = tf.constant([merge_table.get(key, (0, 0))[0] for key in keys], tf.int64)
        self._merge_ids = tf.constant([merge_table.get(key, (0, 0))[1] for key in keys], tf.int32)
        # Whether every merged token is only used by later merges (see `_merge_words`).
        made, first_use = {}, {}
        for rank, (left, right) in enumerate(pairs):
            made[left + right] = rank
            first_use.setdefault(left, rank)
            first_use.setdefault(right, rank)
        self._merge_all_places = all(first_use.get(token, rank + 1) > rank for token, rank in made.items())
        self._byte_ids = tf.constant([token_ids[byte_characters[b]] for b in range(256)], tf.int32)
        character_bytes = {c: bytes([b]) for b, c in byte_characters.items()}
        # What `decode` writes for an id: the bytes a byte-level token stands for, any other token as is.
        self._token_bytes = tf.constant(
            [
                b"".join(map(character_bytes.get, t)) if set(t) <= character_bytes.keys() else t.encode()
                for t in tokens
            ]
        )
        spaces = SPACE_CHARACTER + WHITESPACE
        self._leading_spaces = tf.constant([len(t) - len(t.lstrip(spaces)) for t in tokens], tf.int64)
        self._trailing_spaces = tf.constant([len(t) - len(t.rstrip(spaces)) for t in tokens], tf.int64)
        specials = sorted(set(self.special_tokens().values()) | set(self.added_tokens), key=len, reverse=True)
        self._special_pattern = "|".join(
            (f"[{WS}]*" if self.mask_token_lstrip and token == self.mask_token else "") + re2_literal(token)
            for token in specials
        )
        self._special_contents = tf.constant(specials)
        self._special_ids = tf.constant([token_ids[token] for token in specials], tf.int32)
        self._token_ids = token_ids
        self._merges = tuple(f"{left} {right}" for left, right in pairs)
        self._vocabulary = tuple(tokens)

    # Saving: the vocabulary and merges are files in the `.keras` archive, not part of the config.

    def save_assets(self, dir_path):
        self._checked_vocabulary()
        with open(os.path.join(dir_path, VOCABULARY_FILE), "w", encoding="utf-8") as file:
            json.dump(dict(self._token_ids), file, ensure_ascii=False)
        with open(os.path.join(dir_path, MERGES_FILE), "w", encoding="utf-8") as file:
            file.write("".join(f"{merge}\n" for merge in self._merges))

    def load_assets(self, dir_path):
        missing = missing_files(dir_path)
        if missing:
            raise ValueError(
                f"The saved model has no {' and no '.join(missing)} for RobertaTokenizer '{self.name}': the "
                "file is incomplete. Save the model again with model.save('model.keras')."
            )
        self.set_vocabulary(dir_path)

    # Presets: HF's `vocab.json`, `merges.txt` and tokenizer settings.

    families = ("roberta", "modernbert", "longformer")  # the families whose checkpoints use this byte-level BPE
    word_start_marker = SPACE_CHARACTER

    @property
    def packer_class(self):
        """How the model packs texts: `RobertaPacker`, or `SingleSeparatorPacker` with `pair_separators=1`."""
        return RobertaPacker if self.pair_separators == 2 else SingleSeparatorPacker

    def write_files(self, folder):
        """Write `vocab.json` and `merges.txt` (with HF's `#version` line) into `folder`."""
        self._checked_vocabulary()
        write_text_atomically(os.path.join(folder, VOCABULARY_FILE),
                              json.dumps(dict(self._token_ids), ensure_ascii=False))
        write_text_atomically(os.path.join(folder, MERGES_FILE),
                              "#version: 0.2\n" + "".join(f"{merge}\n" for merge in self._merges))

    def hf_tokenizer_config(self):
        """The `tokenizer_config.json` settings HF's `RobertaTokenizer` reads (`<mask>` takes the space on its
        left there, as `mask_token_lstrip=True`)."""
        return {"tokenizer_class": "RobertaTokenizer", "add_prefix_space": self.add_prefix_space,
                "bos_token": self.cls_token, "eos_token": self.sep_token, **self.special_tokens()}

    def tokenize_words(self, words):
        """Ids of each word of pre-split text, each word with a space in front as HF's
        `is_split_into_words=True` (which needs `add_prefix_space=True`) cuts it."""
        words = to_string_tensor(words, type(self).__name__)
        return self.tokenize(words if self.add_prefix_space else tf.strings.join([" ", words]))

    # Vocabulary.

    def get_merges(self):
        """The merges as `"a b"` strings, the first merged first."""
        self._checked_vocabulary()
        return list(self._merges)

    # Tokenising.

    def compute_output_spec(self, texts):
        return keras.KerasTensor((*texts.shape, None), "int32", ragged=True)

    def tokenize_with_offsets(self, texts):
        """`(ids, starts, ends)`: offsets are character (code point) indices into the input text.

        They are HF's `return_offsets_mapping`: a token holding some of a character's bytes spans the
        whole character, and spaces at a token's ends are left out of its span (`"a cat"` -> `a` (0, 1),
        `Ġcat` (2, 5); a lone `Ġ` spans nothing), unless `trim_offsets=False` (`Ġcat` (1, 5)).
        """
        return self.per_text(self._tokenize_rows_with_offsets, texts)

    # One graph per tokenizer for the batch work: faster than running it op by op in eager mode.
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def _tokenize_rows(self, texts):
        return self._encode(texts)[0]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def _tokenize_rows_with_offsets(self, texts):
        ids, byte_starts, byte_ends, leading, trailing = self._encode(texts)
        # Bytes -> characters: a byte inside a character stands for the whole character.
        characters = tf.strings.unicode_decode_with_offsets(texts, "UTF-8")[1]
        text_start = tf.cumsum(byte_length(texts), exclusive=True)
        character_starts = characters.flat_values + tf.gather(text_start, row_ids(characters))
        token_text = row_ids(ids)
        base = tf.gather(text_start, token_text)
        first = tf.gather(characters.row_splits, token_text)
        starts = tf.searchsorted(character_starts, base + byte_starts, "right", out_type=tf.int64) - 1 - first
        ends = tf.searchsorted(character_starts, base + byte_ends - 1, "right", out_type=tf.int64) - first
        if not self.trim_offsets:
            return ids, ids.with_flat_values(starts), ids.with_flat_values(ends)
        # HF's `trim_offsets` (RobertaProcessing): spaces at a token's ends leave its span, but for the
        # one space `add_prefix_space` put before the first token.
        position = tf.range(tf.size(token_text, out_type=tf.int64)) - tf.gather(ids.row_splits, token_text)
        added_space = ((position == 0) | (starts == 0)) & (leading == 1) & self.add_prefix_space
        leading = tf.where(added_space, tf.zeros_like(leading), leading)
        starts = tf.where(leading > 0, tf.minimum(starts + leading, ends), starts)
        ends = tf.where((trailing > 0) & (ends >= trailing), tf.maximum(ends - trailing, starts), ends)
        return ids, ids.with_flat_values(starts), ids.with_flat_values(ends)

    def _encode(self, texts):
        """Ids (ragged `[texts, (tokens)]`) and, per token (flat), its byte start and end in its text and
        the spaces (characters) at its start and end, which HF's offsets leave out."""
        text_start = tf.cumsum(byte_length(texts), exclusive=True)
        joined = tf.strings.reduce_join(texts)  # byte positions below are positions in this
        # 1. Special tokens written in the text are pieces of their own. (tf-text's regex_split stops at
        # a NUL byte: the regular expressions see another control character, \x01, in its place.)
        searchable = tf.strings.regex_replace(texts, r"\x00", "\x01")
        pattern = self._special_pattern
        pieces, piece_starts, _ = tf_text.regex_split_with_offsets(searchable, pattern, pattern)
        piece_text, piece_text_row = pieces.flat_values, row_ids(pieces)
        piece_start = piece_starts.flat_values + tf.gather(text_start, piece_text_row)
        is_special = tf.strings.regex_full_match(piece_text, pattern)
        special = tf.boolean_mask(piece_text, is_special)  # a `<mask>` with the whitespace it took
        matches = tf.strings.regex_replace(special, f"^[{WS}]+", "")[:, None] == self._special_contents
        special_ids = tf.gather(self._special_ids, tf.argmax(tf.cast(matches, tf.int32), axis=1))
        # 2. Words: GPT-2's regular expression on the other pieces ("." stands in for a special piece:
        # one word). The space `add_prefix_space` puts in front is in no text: a word holding it starts
        # at the piece's start.
        prefix = tf.zeros_like(piece_start)
        if self.add_prefix_space:
            prefix = tf.cast(~is_special & (tf.strings.substr(piece_text, 0, 1) != " "), tf.int64)
            piece_text = tf.where(prefix == 1, tf.strings.join([" ", piece_text]), piece_text)
        word_piece, word_starts, word_ends = self._split_words(tf.where(is_special, ".", piece_text))
        ordinary = ~tf.gather(is_special, word_piece)
        piece, start, end = (tf.boolean_mask(x, ordinary) for x in (word_piece, word_starts, word_ends))
        added_space = tf.cast((start == 0) & (tf.gather(prefix, piece) == 1), tf.int64)
        start = tf.gather(piece_start - prefix, piece) + start + added_space
        end = tf.gather(piece_start - prefix, piece) + end
        words = tf.strings.substr(joined, start, end - start)
        words = tf.where(added_space == 1, tf.strings.join([" ", words]), words)
        # 3. Byte-pair merges, once per distinct word; then each word's tokens, in the order of the text.
        unique_words, unique_index = tf.unique(words, out_idx=tf.int64)
        symbol_ids, symbol_starts = self._merge_words(unique_words)
        num_special = tf.size(special_ids, out_type=tf.int64)
        special_index = tf.size(unique_words, out_type=tf.int64) + tf.range(num_special)
        source = interleave(ordinary, unique_index, special_index)  # rows of the two, word by word

        def in_text_order(symbol_values, special_values):
            """`[words, (tokens)]`: the values of each word's symbols, or of its special token."""
            one_each = tf.RaggedTensor.from_row_lengths(special_values, tf.ones([num_special], tf.int64))
            return tf.gather(tf.concat([symbol_values, one_each], axis=0), source)

        ids = in_text_order(symbol_ids, special_ids)
        starts = in_text_order(symbol_starts, tf.zeros([num_special], tf.int64)).flat_values
        spaces = []
        for table, edge in [
            (self._leading_spaces, f"^[{SPACES}]+"),
            (self._trailing_spaces, f"[{SPACES}]+$"),
        ]:
            special_spaces = tf.strings.length(special, "UTF8_CHAR")
            special_spaces -= tf.strings.length(tf.strings.regex_replace(special, edge, ""), "UTF8_CHAR")
            ordinary_spaces = symbol_ids.with_flat_values(tf.gather(table, symbol_ids.flat_values))
            spaces.append(in_text_order(ordinary_spaces, tf.cast(special_spaces, tf.int64)).flat_values)
        # 4. Byte offsets: a token ends where the next one of its word starts; a lone added space spans
        # the piece's first character, as in HF.
        token_word = row_ids(ids)
        position = tf.range(tf.size(token_word, out_type=tf.int64))
        last_of_word = position == tf.gather(ids.row_splits[1:] - 1, token_word)
        word_bytes = tf.gather(interleave(ordinary, byte_length(words), byte_length(special)), token_word)
        ends = tf.where(last_of_word, word_bytes, tf.concat([starts[1:], tf.zeros([1], tf.int64)], 0))
        word_text = tf.gather(piece_text_row, word_piece)
        word_start = interleave(ordinary, start, tf.boolean_mask(piece_start, is_special))
        origin = tf.gather(word_start - tf.gather(text_start, word_text), token_word)
        shift = tf.gather(interleave(ordinary, added_space, tf.zeros([num_special], tf.int64)), token_word)
        byte_starts = origin + tf.maximum(starts - shift, 0)
        byte_ends = origin + tf.maximum(ends - shift, shift)
        # 5. One row per text.
        text_splits = tf.searchsorted(word_text, tf.range(tf.size(texts, out_type=tf.int64) + 1))
        ids = tf.RaggedTensor.from_row_splits(ids.flat_values, tf.gather(ids.row_splits, text_splits))
        return ids, byte_starts, byte_ends, *spaces

    def _split_words(self, pieces):
        """`(piece of each word, byte start, byte end)`: the words of HF's ByteLevel pre-tokenizer.

        WORD_PATTERN leaves each whitespace character alone, but for a space before a non-space (which
        starts that word). HF's `\\s+(?!\\S)` makes a whitespace run one word, less its last character
        when a word with no space in front follows: so a lone whitespace character joins the one before
        it, unless it is that last character.
        """
        parts, part_starts, part_ends = tf_text.regex_split_with_offsets(pieces, WORD_PATTERN, WORD_PATTERN)
        part_piece = row_ids(parts)
        lone_space = tf.strings.regex_full_match(parts.flat_values, f"[{WS}]")
        plain = ~tf.strings.regex_full_match(parts.flat_values, f"(?s)[{WS}].*")
        same_piece = tf.concat([[False], part_piece[1:] == part_piece[:-1]], 0)[: tf.size(part_piece)]
        after_lone_space = same_piece & tf.concat([[False], lone_space], 0)[:-1]
        before_plain = tf.concat([same_piece & plain, [False]], 0)[1:]
        starts_word = ~(lone_space & after_lone_space & ~before_plain)
        word_ends = tf.math.segment_max(part_ends.flat_values, tf.cumsum(tf.cast(starts_word, tf.int64)) - 1)
        word_starts = tf.boolean_mask(part_starts.flat_values, starts_word)
        return tf.boolean_mask(part_piece, starts_word), word_starts, word_ends

    def _merge_words(self, words):
        """Byte-pair merges of each word: `(ids, byte starts)`, ragged `[words, (tokens)]`.

        HF's BPE merges, of the neighbouring pairs in `merges.txt`, the first one listed (the leftmost
        of its places), until none is left. Each step here merges in every word all the places of its
        first pair, left to right (`a a a` -> `aa a`): the same, when a merged token is only used by
        later merges, as in any trained BPE (else one place a step). A word with nothing left to merge
        leaves the loop, so that a long word costs only its own steps.
        """
        lengths = byte_length(words)
        position = tf.range(tf.reduce_sum(lengths))
        word = tf.searchsorted(tf.cumsum(lengths), position, "right", out_type=tf.int64)
        starts = position - tf.gather(tf.cumsum(lengths, exclusive=True), word)
        ids = tf.io.decode_raw(tf.strings.reduce_join(words), tf.uint8)
        ids = tf.gather(self._byte_ids, tf.cast(ids, tf.int32))
        num_words = tf.size(words, out_type=tf.int64)
        vocabulary_size = tf.constant(len(self._vocabulary), tf.int64)
        no_merge = tf.constant(np.iinfo(np.int64).max, tf.int64)
        done = tuple(
            tf.TensorArray(dtype, size=0, dynamic_size=True, infer_shape=False, element_shape=[None])
            for dtype in (tf.int32, tf.int64, tf.int64)
        )

        def merge(step, ids, starts, word, done):
            key = tf.cast(ids[:-1], tf.int64) * vocabulary_size + tf.cast(ids[1:], tf.int64)
            index = tf.searchsorted(self._merge_keys, key, out_type=tf.int64)
            index = tf.minimum(index, tf.size(self._merge_keys, out_type=tf.int64) - 1)
            found = (tf.gather(self._merge_keys, index) == key) & (word[:-1] == word[1:])
            rank = tf.where(found, tf.gather(self._merge_ranks, index), no_merge)
            first_rank = tf.math.unsorted_segment_min(rank, word[:-1], num_words)
            merging = found & (rank == tf.gather(first_rank, word[:-1]))
            position = tf.range(tf.size(key, out_type=tf.int64))
            if self._merge_all_places:
                # The places of one pair overlap only as in `a a a`: every other place of such a run.
                run_starts = merging & ~tf.concat([[False], merging], 0)[:-1]
                run_start = tf.concat([[0], tf.boolean_mask(position, run_starts)], 0)
                run_start = tf.gather(run_start, tf.cumsum(tf.cast(run_starts, tf.int64)))
                merging &= (position - run_start) % 2 == 0
            else:
                places = tf.where(merging, position, no_merge)
                leftmost = tf.math.unsorted_segment_min(places, word[:-1], num_words)
                merging &= position == tf.gather(leftmost, word[:-1])
            merged = tf.concat([tf.where(merging, tf.gather(self._merge_ids, index), ids[:-1]), ids[-1:]], 0)
            keep = ~tf.concat([[False], merging], 0)[: tf.size(ids)]
            state = [tf.boolean_mask(x, keep) for x in (merged, starts, word)]
            finished = tf.gather(first_rank == no_merge, state[2])
            done = tuple(array.write(step, tf.boolean_mask(x, finished)) for array, x in zip(done, state))
            return (step + 1, *[tf.boolean_mask(x, ~finished) for x in state], done)

        *_, done = tf.while_loop(
            lambda step, ids, *_: tf.size(ids) > 0,
            merge,
            (tf.constant(0), ids, starts, word, done),
            shape_invariants=(tf.TensorShape([]), *[tf.TensorShape([None])] * 3, (tf.TensorShape(None),) * 3),
        )
        ids, starts, word = (array.concat() for array in done)
        order = tf.argsort(word, stable=True)  # words left the loop in the order they were done
        return tuple(
            tf.RaggedTensor.from_value_rowids(tf.gather(x, order), tf.gather(word, order), nrows=num_words)
            for x in (ids, starts)
        )

    # Detokenising.

    def join_tokens(self, ids):
        """`detokenize`'s join, as HF's `decode` (with no `clean_up_tokenization_spaces`, transformers 5's
        default): the bytes of the tokens joined (special tokens as written), bytes that are no UTF-8
        shown as U+FFFD."""
        pieces = tf.gather(self._token_bytes, ids.flat_values)
        row_ends = tf.gather(tf.concat([[0], tf.cumsum(byte_length(pieces))], 0), ids.row_splits)
        text = tf.strings.substr(tf.strings.reduce_join(pieces), row_ends[:-1], row_ends[1:] - row_ends[:-1])
        return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
