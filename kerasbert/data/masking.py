"""Masked-language-model masking for BERT pre-training, in graph mode inside `tf.data` or eagerly.

`MaskedLMMasker` chooses `selection_rate` (a `MaskingConfig` field, as the rates below) of the
maskable tokens of each sequence (never `[CLS]`, `[SEP]` or `[PAD]`), replaces `mask_token_rate` of
the chosen ones by `[MASK]` and `random_token_rate` by a token drawn uniformly from the ids that are
neither unselectable nor `[MASK]` (Google draws from the whole vocabulary), keeps the rest, and
returns the positions and original ids of the chosen tokens padded to `max_selections` (the outputs
of keras-hub's `MaskedLMMaskGenerator`).

How many per sequence: Google BERT's `create_pretraining_data.py` rule,
`min(max_selections, max(1, round(n * selection_rate)))` with Python's round half to even,
except that `n` counts the maskable tokens only. Google's `n` also counts `[CLS]` and `[SEP]`; the
two agree on full 128-token sequences (19) and Google chooses a little more on short ones (Jane
Austen paragraphs: 15.4% of the maskable tokens against 15.1% here). tf-text's
`RandomItemSelector` rounds up (15.65% there) and, given words, caps words rather than pieces;
its `MaskValuesChooser` can insert special tokens, and both draw from the global random state. So
this module selects and replaces by itself, with stateless random ops, in pure TF.

Strategies:
    "token": independent WordPiece tokens (BERT).
    "whole_word": a word (a piece and the `##` pieces after it) is chosen whole. Words are tried
        in a random order and a word that would overshoot the budget is skipped, as in Google's
        whole word masking, so no word is split and the cap counts pieces.
    "span": SpanBERT. A span starts at the beginning of the word of a random unchosen token and
        covers a number of words drawn from a geometric distribution (`span_geometric_p`),
        truncated at `max_span_length` and renormalised as SpanBERT does (mean 3.8 words for 0.2
        and 10). Spans stop at special tokens; they are drawn until the budget is used, the last
        one cut at the budget (possibly inside a word, as in SpanBERT). [MASK] / random /
        unchanged is decided once per span (per run of adjacent chosen tokens: SpanBERT merges
        touching spans first), random ids per token.

Randomness: each call takes a fresh seed from a `tf.random.Generator` seeded by `seed`, so calling
again gives a new mask (dynamic masking: `dataset.repeat().shuffle(n).ragged_batch(32).map(masker)`),
and maskers built with the same seed give the same masks for the same calls (static masking: map
once with a fixed seed and `.cache()`, or mask the corpus eagerly; map sequentially, as parallel
calls take the seeds in any order). Cost on one CPU thread, batches of 32 x 128 ids: about 5 ms
("token"), 7 ms ("whole_word") and 11 ms ("span").

Examples:
    >>> masker = MaskedLMMasker(vocabulary_size=1000, mask_token_id=103, unselectable_token_ids=[0, 101, 102],
    ...                         masking=MaskingConfig(max_selections=4), seed=1)
    >>> outputs = masker(tf.ragged.constant([[101, 7, 8, 9, 10, 11, 12, 102]]))
    >>> sorted(outputs), outputs["mask_weights"].numpy().tolist()
    (['mask_ids', 'mask_positions', 'mask_weights', 'token_ids'], [[1.0, 0.0, 0.0, 0.0]])
"""

import numbers

import numpy as np
import tensorflow as tf

from kerasbert.arguments import check_count
from kerasbert.data.mask_selection import (
    run_indices,
    select_spans,
    select_tokens,
    select_whole_words,
    selection_budget,
    selection_outputs,
    span_length_probabilities,
    word_indices,
)
from kerasbert.data.masking_config import MaskingConfig
from kerasbert.tokenizers.vocabulary import CONTINUATION_PREFIX


def cpu_generator(seed):
    """A `tf.random.Generator` on the CPU, where tf.data runs: seeded by `seed`, or from fresh entropy if None."""
    with tf.device("/CPU:0"):
        if seed is None:
            return tf.random.Generator.from_non_deterministic_state()
        return tf.random.Generator.from_seed(seed)

class MaskedLMMasker:
    """Masks token ids for masked-language-model pre-training (see the module docstring).

    Args:
        vocabulary_size: number of token ids.
        mask_token_id: the id of `[MASK]`.
        unselectable_token_ids: ids never chosen nor drawn as random replacements (`[CLS]`,
            `[SEP]`, `[PAD]`, ...). `[MASK]` is never drawn either.
        continuation_token_ids: ids of the `##` pieces; "whole_word" and "span" need them.
        masking: a `MaskingConfig` (rates, `max_selections`, strategy, span lengths); None: BERT's.
        seed: int for reproducible masks; None for a nondeterministic start.

    Call with int ids: a `tf.RaggedTensor` `[batch, (length)]`, a dense `[batch, T]` tensor whose
    padding is an unselectable id such as `[PAD]`, or one 1-D sequence. Returns a dict of
    `token_ids` (the masked ids: the input's type, shape and dtype), int32 `mask_positions`
    (sorted, padded with 0), int32 `mask_ids` (the original ids there, padded with 0) and float32
    `mask_weights` (1.0 on real selections, 0.0 on padding), each `[batch, max_selections]`
    (`[max_selections]` for a 1-D input).

    Examples:
        >>> masker = MaskedLMMasker(1000, mask_token_id=103, unselectable_token_ids=[0, 101, 102],
        ...                         masking=MaskingConfig(mask_token_rate=1.0, random_token_rate=0.0, max_selections=2))
        >>> masker(tf.constant([101, 7, 8, 9, 102, 0]))["token_ids"].numpy().tolist().count(103)
        1
    """

    def __init__(self, vocabulary_size, mask_token_id, unselectable_token_ids, continuation_token_ids=None,
                 masking=None, seed=None):
        self.masking = MaskingConfig.coerce(masking)
        _check_ids(vocabulary_size, mask_token_id, unselectable_token_ids, continuation_token_ids, self.masking)
        if seed is not None and not _is_int(seed):
            raise TypeError(f"seed must be an int or None, got {type(seed).__name__} {seed!r}.")
        self.vocabulary_size = int(vocabulary_size)
        self.mask_token_id = int(mask_token_id)
        self.unselectable_token_ids = sorted({int(i) for i in unselectable_token_ids})
        self.continuation_token_ids = sorted({int(i) for i in continuation_token_ids or ()})
        self.seed = seed
        self._unselectable = _id_table(self.unselectable_token_ids, self.vocabulary_size)
        self._continuation = _id_table(self.continuation_token_ids, self.vocabulary_size)
        never_drawn = np.array(sorted(set(self.unselectable_token_ids) | {self.mask_token_id}))
        self._num_drawable = self.vocabulary_size - len(never_drawn)
        # The i-th id never drawn has (id - i) drawable ids below it: see `_random_token_ids`.
        self._drawable_below = tf.constant(never_drawn - np.arange(len(never_drawn)), tf.int64)
        probabilities = span_length_probabilities(self.masking.span_geometric_p, self.masking.max_span_length)
        self._span_logits = tf.math.log(tf.constant(probabilities, tf.float32))
        self._generator = cpu_generator(seed)

    @classmethod
    def from_tokenizer(cls, tokenizer, masking=None, seed=None):
        """A masker for a `BertTokenizer`'s vocabulary, with `masking` (a `MaskingConfig`) and `seed`.

        Unselectable: `[PAD]`, `[CLS]`, `[SEP]`, `[MASK]` and the other bracketed specials such
        as `[unused0]`, but not `[UNK]` (maskable, as in BERT). Continuation ids: the pieces
        starting with "##".

        Examples:
            >>> tokenizer = BertTokenizer.from_preset("all_minilm_l6_v2_en")
            >>> masker = MaskedLMMasker.from_tokenizer(tokenizer, MaskingConfig(strategy="whole_word"), seed=0)
            >>> len(masker.unselectable_token_ids), len(masker.continuation_token_ids)
            (998, 5828)
        """
        vocabulary = tokenizer.get_vocabulary()
        special_ids = {i for i, token in enumerate(vocabulary) if is_bracketed(token)}
        special_ids |= {tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id}
        special_ids.add(tokenizer.mask_token_id)
        special_ids.discard(tokenizer.unk_token_id)
        continuation_ids = [i for i, token in enumerate(vocabulary) if token.startswith(CONTINUATION_PREFIX)]
        return cls(len(vocabulary), tokenizer.mask_token_id, sorted(special_ids), continuation_ids, masking, seed)

    def __call__(self, token_ids, joined=None):
        return self.with_seed(token_ids, self._generator.make_seeds(1)[:, 0], joined)

    def with_seed(self, token_ids, seed, joined=None):
        """A call's outputs, drawn with the stateless `seed` (two ints) instead of the generator's next one: the same
        ids and seed give the same mask, in any order of calls. `joined`: per token, whether it continues a
        knowledge unit (see the module docstring), shaped as `token_ids`.

        Examples:
            >>> masker.with_seed(batch["token_ids"], tf.constant([0, batch_number], tf.int64))
        """
        if joined is not None and self.masking.strategy == "token":
            raise ValueError("Knowledge units (joined tokens) are masked whole: use MaskingConfig(strategy="
                             "'whole_word') (ERNIE) or 'span', not 'token'.")
        ids, valid, restore = _to_dense_batch(token_ids)
        joined = tf.zeros_like(valid) if joined is None else _to_dense_batch(tf.cast(joined, tf.int32))[0] > 0
        return restore(self._mask_batch(ids, valid, tf.cast(seed, tf.int64), joined))

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None], tf.int64),
            tf.TensorSpec([None, None], tf.bool),
            tf.TensorSpec([2], tf.int64),
            tf.TensorSpec([None, None], tf.bool),
        ],
        autograph=False,
    )
    def _mask_batch(self, ids, valid, seed, joined):
        """The outputs for a dense `[batch, T]` int64 batch whose real tokens are `valid` (`joined`: tokens that
        continue a knowledge unit)."""
        seeds = tf.random.experimental.stateless_split(seed, 3)
        selection_seed, decision_seed, random_seed = tf.unstack(seeds)
        selected = self._select(ids, valid & ~tf.gather(self._unselectable, ids), selection_seed, joined)
        decisions = tf.random.stateless_uniform(tf.shape(ids), decision_seed)
        if self.masking.strategy == "span":  # one decision per span
            decisions = tf.gather(decisions, run_indices(selected), batch_dims=1)
        random_ids = _random_token_ids(tf.shape(ids), self._num_drawable, self._drawable_below, random_seed)
        mask_ids = tf.fill(tf.shape(ids), tf.constant(self.mask_token_id, tf.int64))
        masked, drawn = self.masking.mask_token_rate, self.masking.mask_token_rate + self.masking.random_token_rate
        replacements = tf.where(decisions < drawn, random_ids, ids)
        replacements = tf.where(decisions < masked, mask_ids, replacements)
        outputs = selection_outputs(ids, selected, self.masking.max_selections)
        return {"token_ids": tf.where(selected, replacements, ids), **outputs}

    def _select(self, ids, selectable, seed, joined):
        """The bool `[batch, T]` mask of the chosen tokens."""
        budget = selection_budget(selectable, self.masking.selection_rate, self.masking.max_selections)
        if self.masking.strategy == "token":
            return select_tokens(selectable, budget, seed)
        word_ids = word_indices(selectable, tf.gather(self._continuation, ids) | joined)
        if self.masking.strategy == "whole_word":
            return select_whole_words(selectable, word_ids, budget, seed)
        return select_spans(selectable, word_ids, budget, self._span_logits, seed)


def _check_ids(vocabulary_size, mask_token_id, unselectable_token_ids, continuation_token_ids, masking):
    """Raise, naming the argument and the fix, on ids a `MaskedLMMasker` cannot use with `masking`."""
    check_count("vocabulary_size", vocabulary_size)
    for name, ids in [
        ("mask_token_id", [mask_token_id]),
        ("unselectable_token_ids", unselectable_token_ids),
        ("continuation_token_ids", continuation_token_ids or []),
    ]:
        if not all(_is_int(i) and 0 <= i < vocabulary_size for i in ids):
            raise ValueError(f"{name} must be ids in [0, vocabulary_size={vocabulary_size}), got {ids!r}.")
    if masking.strategy != "token" and not continuation_token_ids:
        raise ValueError(
            f'strategy="{masking.strategy}" needs continuation_token_ids (the ids of the "##" pieces) to find '
            f"words: pass them, or build the masker with MaskedLMMasker.from_tokenizer(tokenizer)."
        )
    if masking.random_token_rate > 0 and len(set(unselectable_token_ids) | {mask_token_id}) == vocabulary_size:
        raise ValueError("random_token_rate > 0 needs a selectable id to draw: set random_token_rate=0.")


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_bracketed(token):
    """Whether a vocabulary entry is a special token such as `[CLS]` or `[unused0]`."""
    return len(token) > 2 and token.startswith("[") and token.endswith("]")


def _id_table(ids, vocabulary_size):
    """A bool vector over the vocabulary, True at `ids`: `tf.gather(table, token_ids)` tests them."""
    table = np.zeros(vocabulary_size, bool)
    table[list(ids)] = True
    return tf.constant(table)


def _to_dense_batch(token_ids):
    """`(ids, valid, restore)`: int64 `[batch, T]` ids, their real-token mask, and the function
    that gives the masker's outputs the input's type, shape and dtype."""
    if isinstance(token_ids, tf.RaggedTensor):
        if token_ids.shape.rank != 2:
            raise ValueError(
                f"token_ids must be a [batch, (length)] RaggedTensor, got shape {token_ids.shape}."
            )
        ids = tf.cast(token_ids.to_tensor(), tf.int64)
        valid = tf.sequence_mask(token_ids.row_lengths(), tf.shape(ids)[1])

        def restore(outputs):
            masked = tf.cast(tf.boolean_mask(outputs["token_ids"], valid), token_ids.dtype)
            return {**outputs, "token_ids": token_ids.with_flat_values(masked)}

        return ids, valid, restore
    token_ids = tf.convert_to_tensor(token_ids)
    if not token_ids.dtype.is_integer or token_ids.shape.rank not in (1, 2):
        raise ValueError(
            f"token_ids must be int ids of shape [batch, T] or [T], or a [batch, (length)] RaggedTensor; "
            f"got {token_ids.dtype.name} of shape {token_ids.shape}."
        )
    ids = tf.cast(tf.reshape(token_ids, [-1, tf.shape(token_ids)[-1]]), tf.int64)

    def restore(outputs):
        outputs = {**outputs, "token_ids": tf.cast(outputs["token_ids"], token_ids.dtype)}
        if token_ids.shape.rank == 1:
            return {key: value[0] for key, value in outputs.items()}
        return outputs

    return ids, tf.ones_like(ids, tf.bool), restore


def _random_token_ids(shape, num_drawable, drawable_below, seed):
    """Ids drawn uniformly from the vocabulary without the never-drawn ids e_0 < e_1 < ...

    The r-th drawable id is r + #{i: e_i - i <= r}, `drawable_below` holding e_i - i.
    """
    indices = tf.random.stateless_uniform([tf.reduce_prod(shape)], seed, maxval=num_drawable, dtype=tf.int64)
    shift = tf.searchsorted(drawable_below, indices, side="right", out_type=tf.int64)
    return tf.reshape(indices + shift, shape)
