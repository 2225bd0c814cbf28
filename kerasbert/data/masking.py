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
            decisions = tf.gather(decisions, _run_indices(selected), batch_dims=1)
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
        word_ids = _word_indices(selectable, tf.gather(self._continuation, ids) | joined)
        if self.masking.strategy == "whole_word":
            return _select_whole_words(selectable, word_ids, budget, seed)
        return _select_spans(selectable, word_ids, budget, self._span_logits, seed)


def span_length_probabilities(p, max_length):
    """P(span = k words) for k = 1..max_length: geometric(p) truncated and renormalised (SpanBERT).

    Examples:
        >>> probabilities = span_length_probabilities(0.2, 10)
        >>> round(float(np.sum(np.arange(1, 11) * probabilities)), 2)
        3.8
    """
    probabilities = p * (1 - p) ** np.arange(max_length)
    return probabilities / probabilities.sum()


def selection_budget(selectable, rate, max_selections):
    """Tokens to choose per row: `min(max_selections, max(1, round(n * rate)))` for `n` maskable
    tokens, rounding half to even as Python (0 when `n` or `rate` is 0).

    Examples:
        >>> selection_budget(tf.constant([[True] * 10, [True] * 3 + [False] * 7]), 0.15, 20).numpy()
        array([2, 1], dtype=int32)
    """
    count = tf.reduce_sum(tf.cast(selectable, tf.int32), axis=1)
    budget = tf.cast(tf.round(tf.cast(count, tf.float64) * rate), tf.int32)
    budget = tf.minimum(tf.maximum(budget, 1 if rate > 0 else 0), max_selections)
    return tf.minimum(budget, count)


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


def select_tokens(selectable, budget, seed):
    """The first `budget` selectable tokens of each row in a random order ("token")."""
    keys = tf.where(selectable, tf.random.stateless_uniform(tf.shape(selectable), seed), 2.0)
    ranks = tf.argsort(tf.argsort(keys, axis=1), axis=1)
    return ranks < budget[:, None]


def _word_indices(selectable, is_continuation):
    """The index of each token's word in its row: a word is a piece and the `##` pieces after it;
    an unselectable token is a word of its own.

    Examples:
        >>> selectable = tf.constant([[False, True, True, True, False, True]])
        >>> is_continuation = tf.constant([[False, False, True, True, False, True]])
        >>> _word_indices(selectable, is_continuation).numpy().tolist()
        [[0, 1, 1, 1, 2, 3]]
    """
    after_selectable = tf.pad(selectable[:, :-1], [[0, 0], [1, 0]])
    continues = is_continuation & selectable & after_selectable
    return tf.cumsum(tf.cast(~continues, tf.int32), axis=1) - 1


def _per_word(values, word_ids, reduce):
    """`[batch, T]` token values reduced per word: slot w of a row holds the row's word w."""
    batch_size, length = tf.unstack(tf.shape(word_ids))
    segments = word_ids + length * tf.range(batch_size)[:, None]
    return tf.reshape(reduce(values, segments, batch_size * length), [batch_size, length])


def _select_whole_words(selectable, word_ids, budget, seed):
    """Whole words in a random order, skipping those that would overshoot `budget` ("whole_word")."""
    keys = tf.random.stateless_uniform(tf.shape(selectable), seed)
    is_start = tf.not_equal(word_ids, tf.pad(word_ids[:, :-1], [[0, 0], [1, 0]], constant_values=-1))
    word_keys = _per_word(tf.where(selectable & is_start, keys, 2.0), word_ids, tf.math.unsorted_segment_min)
    word_lengths = _per_word(tf.cast(selectable, tf.int32), word_ids, tf.math.unsorted_segment_sum)
    order = tf.argsort(word_keys, axis=1)
    taken = _fill_greedily(tf.gather(word_lengths, order, batch_dims=1), budget)
    taken_words = tf.gather(taken, tf.argsort(order, axis=1), batch_dims=1)
    return selectable & tf.gather(taken_words, word_ids, batch_dims=1)


def _fill_greedily(lengths, budget):
    """Which items of each row are taken when items are tried in order and taken if they fit in
    what is left of `budget` (Google's whole word masking loop).

    Each round takes, from the next item that fits, the items that fit one after the other, so the
    rounds are few.

    Examples:
        >>> _fill_greedily(tf.constant([[2, 3, 1, 2, 0]]), tf.constant([4])).numpy().tolist()
        [[True, False, True, False, False]]
    """
    index = tf.range(tf.shape(lengths)[1])[None, :]
    end = tf.shape(lengths)[1]

    def room_and_next(taken, start):
        """What is left of the budget, and the first untaken item from `start` that fits in it."""
        room = budget - tf.reduce_sum(tf.where(taken, lengths, 0), axis=1)
        fits = (index >= start[:, None]) & ~taken & (lengths > 0) & (lengths <= room[:, None])
        return room, tf.reduce_min(tf.where(fits, index, end), axis=1)

    def take_run(taken, start):
        room, _ = room_and_next(taken, start)
        pending = index >= start[:, None]
        run = pending & (lengths > 0) & (tf.cumsum(tf.where(pending, lengths, 0), axis=1) <= room[:, None])
        return taken | run, room_and_next(taken | run, start)[1]

    taken = tf.zeros_like(lengths, tf.bool)
    start = room_and_next(taken, tf.zeros_like(budget))[1]
    return tf.while_loop(lambda taken, start: tf.reduce_any(start < end), take_run, (taken, start))[0]


def _select_spans(selectable, word_ids, budget, span_logits, seed):
    """SpanBERT spans of words until each row's `budget` of tokens is chosen ("span")."""
    positions = tf.range(tf.shape(selectable)[1])[None, :]
    first_positions = _per_word(
        tf.broadcast_to(positions, tf.shape(word_ids)), word_ids, tf.math.unsorted_segment_min
    )
    word_starts = tf.gather(first_positions, word_ids, batch_dims=1)

    def room(selected):
        return budget - tf.reduce_sum(tf.cast(selected, tf.int32), axis=1)

    def add_span(step, selected):
        step_seed = tf.random.experimental.stateless_fold_in(seed, step)
        anchor_seed, length_seed = tf.unstack(tf.random.experimental.stateless_split(step_seed, 2))
        candidates = selectable & ~selected
        anchor_keys = tf.random.stateless_uniform(tf.shape(selectable), anchor_seed)
        anchors = tf.argmax(tf.where(candidates, anchor_keys, -1.0), axis=1, output_type=tf.int32)
        start = tf.gather(word_starts, anchors, batch_dims=1)[:, None]
        last_word = tf.gather(word_ids, start, batch_dims=1) - 1
        last_word += _span_lengths(span_logits, tf.shape(selectable)[0], length_seed)[:, None]
        stop = tf.reduce_min(tf.where(~selectable & (positions >= start), positions, tf.int32.max), axis=1)
        new = candidates & (positions >= start) & (positions < stop[:, None]) & (word_ids <= last_word)
        new &= tf.cumsum(tf.cast(new, tf.int32), axis=1) <= room(selected)[:, None]
        return step + 1, selected | new

    start = (tf.constant(0), tf.zeros_like(selectable))
    return tf.while_loop(lambda step, selected: tf.reduce_any(room(selected) > 0), add_span, start)[1]


def _span_lengths(span_logits, count, seed):
    """`count` span lengths in words, P(k) = softmax(span_logits)[k - 1]."""
    logits = tf.tile(span_logits[None, :], [count, 1])
    return tf.random.stateless_categorical(logits, 1, seed, dtype=tf.int32)[:, 0] + 1


def _run_indices(selected):
    """The index in its row of each token's run of adjacent selected tokens (0 for the others)."""
    previous = tf.pad(selected[:, :-1], [[0, 0], [1, 0]])
    return tf.maximum(tf.cumsum(tf.cast(selected & ~previous, tf.int32), axis=1) - 1, 0)


def _random_token_ids(shape, num_drawable, drawable_below, seed):
    """Ids drawn uniformly from the vocabulary without the never-drawn ids e_0 < e_1 < ...

    The r-th drawable id is r + #{i: e_i - i <= r}, `drawable_below` holding e_i - i.
    """
    indices = tf.random.stateless_uniform([tf.reduce_prod(shape)], seed, maxval=num_drawable, dtype=tf.int64)
    shift = tf.searchsorted(drawable_below, indices, side="right", out_type=tf.int64)
    return tf.reshape(indices + shift, shape)


def selection_outputs(ids, selected, max_selections):
    """`mask_positions`, `mask_ids`, `mask_weights` of the selected tokens, padded to `max_selections`."""
    positions = tf.ragged.boolean_mask(tf.broadcast_to(tf.range(tf.shape(ids)[1]), tf.shape(ids)), selected)
    shape = [None, max_selections]
    return {
        "mask_positions": positions.to_tensor(shape=shape),
        "mask_ids": tf.cast(tf.ragged.boolean_mask(ids, selected).to_tensor(shape=shape), tf.int32),
        "mask_weights": tf.ones_like(positions, tf.float32).to_tensor(shape=shape),
    }
