"""Which tokens masked-LM masking chooses, per row of a dense `[batch, T]` batch, with stateless random ops: the
budget (Google's rounding rule), then independent tokens, whole words (tried in a random order, skipping those that
overshoot) or SpanBERT spans of words; and the positions, ids and weights of the chosen tokens. `MaskedLMMasker`
(`masking.py`) and `TargetMasker` (`seq2seq_masking.py`) decide what replaces them.

Examples:
    >>> selection_budget(tf.constant([[True] * 10]), 0.15, 20).numpy().tolist()
    [2]
"""

import numpy as np
import tensorflow as tf


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


def select_tokens(selectable, budget, seed):
    """The first `budget` selectable tokens of each row in a random order ("token")."""
    keys = tf.where(selectable, tf.random.stateless_uniform(tf.shape(selectable), seed), 2.0)
    ranks = tf.argsort(tf.argsort(keys, axis=1), axis=1)
    return ranks < budget[:, None]


def word_indices(selectable, is_continuation):
    """The index of each token's word in its row: a word is a piece and the `##` pieces after it;
    an unselectable token is a word of its own.

    Examples:
        >>> selectable = tf.constant([[False, True, True, True, False, True]])
        >>> is_continuation = tf.constant([[False, False, True, True, False, True]])
        >>> word_indices(selectable, is_continuation).numpy().tolist()
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


def select_whole_words(selectable, word_ids, budget, seed):
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


def select_spans(selectable, word_ids, budget, span_logits, seed):
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
        last_word += span_lengths(span_logits, tf.shape(selectable)[0], length_seed)[:, None]
        stop = tf.reduce_min(tf.where(~selectable & (positions >= start), positions, tf.int32.max), axis=1)
        new = candidates & (positions >= start) & (positions < stop[:, None]) & (word_ids <= last_word)
        new &= tf.cumsum(tf.cast(new, tf.int32), axis=1) <= room(selected)[:, None]
        return step + 1, selected | new

    start = (tf.constant(0), tf.zeros_like(selectable))
    return tf.while_loop(lambda step, selected: tf.reduce_any(room(selected) > 0), add_span, start)[1]


def span_lengths(span_logits, count, seed):
    """`count` span lengths in words, P(k) = softmax(span_logits)[k - 1]."""
    logits = tf.tile(span_logits[None, :], [count, 1])
    return tf.random.stateless_categorical(logits, 1, seed, dtype=tf.int32)[:, 0] + 1


def run_indices(selected):
    """The index in its row of each token's run of adjacent selected tokens (0 for the others)."""
    previous = tf.pad(selected[:, :-1], [[0, 0], [1, 0]])
    return tf.maximum(tf.cumsum(tf.cast(selected & ~previous, tf.int32), axis=1) - 1, 0)


def selection_outputs(ids, selected, max_selections):
    """`mask_positions`, `mask_ids`, `mask_weights` of the selected tokens, padded to `max_selections`."""
    positions = tf.ragged.boolean_mask(tf.broadcast_to(tf.range(tf.shape(ids)[1]), tf.shape(ids)), selected)
    shape = [None, max_selections]
    return {
        "mask_positions": positions.to_tensor(shape=shape),
        "mask_ids": tf.cast(tf.ragged.boolean_mask(ids, selected).to_tensor(shape=shape), tf.int32),
        "mask_weights": tf.ones_like(positions, tf.float32).to_tensor(shape=shape),
    }
