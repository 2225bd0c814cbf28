"""Greedy and beam-search decoding for `BertSeq2Seq`, one step at a time, on any Keras backend.

The searches are plain numpy loops over a `step(t, parents, previous)` function that returns each row's
best next tokens; `DecodingSteps` is that function for a batch of sources: rows hold `[CLS] source [SEP]
y_0 ... y_{t-1} [MASK]`, each target continuing right after its own source (the positions of training),
and the model predicts the `[MASK]` (UniLM's decoding).

With the cache (the default), the keys and values of every layer are kept for the positions decoded so
far (`MultiHeadSelfAttention`'s `cache`): the source runs once, then each step runs the blocks on two
positions only, the previous token (whose keys and values join the cache in place of the `[MASK]` they
replace) and a new `[MASK]` after it. Without it, each step runs the whole sequence again. The two give the
same tokens (`tests/tasks/test_bert_seq2seq.py`). On all_minilm_l6_v2_en, 32 SQuAD sources of up to 66
tokens, 32 tokens written each (the 2-core CPU machine, busy, 2026-11-25): greedy 2.1 s with the cache,
42.7 s without; 4 beams 13.5 s and 142.6 s.
"""

import keras
import numpy as np

from kerasbert.deployment.model_function import ModelFunction
from kerasbert.families.sequence_length import longest_input
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS


class DecodingFunction(ModelFunction):
    """A `ModelFunction` whose results stay backend tensors, so that a decoding cache stays where it is
    between steps instead of being copied to numpy and back."""

    def __call__(self, *args):
        if self.backend == "tensorflow":
            return self.compiled(*args)
        if self.backend == "jax":
            return self.compiled([variable.value for variable in self.variables()], *args)
        import torch

        with torch.no_grad():
            return self.compiled(*args)


class DecodingSteps:
    """The `step` function of `greedy_search` and `beam_search` for one batch of packed sources.

    Args:
        task: the `BertSeq2Seq` (its `prefill_function`, `cached_step_function`, `uncached_step_function`).
        token_ids, padding_mask: numpy `[sources, S]` packed sources, `[CLS] source [SEP]` then padding.
        max_length: the most target tokens a row may get.
        copies: rows per source (the beam size).
        top_k: how many of the best next tokens each step returns per row.
        use_cache: keep every layer's keys and values (see the module docstring).
    """

    def __init__(self, task, token_ids, padding_mask, max_length, copies, top_k, use_cache):
        token_ids, padding_mask = (np.repeat(np.asarray(array, np.int32), copies, axis=0)
                                   for array in (token_ids, padding_mask))
        rows, self.source_width = token_ids.shape
        self.task, self.top_k, self.use_cache = task, top_k, use_cache
        self.rows = np.arange(rows)
        self.lengths = padding_mask.sum(axis=1)
        # A row's tokens stay below its source length + max_length, which `generate` checked fits the position
        # table; the columns after them are padding.
        width = min(self.source_width + max_length, longest_input(task.backbone))
        self.token_ids = np.full((rows, width), task.tokenizer.pad_token_id, np.int32)
        self.token_ids[:, :self.source_width] = token_ids
        self.segment_ids = np.zeros((rows, width), np.int32)
        self.padding_mask = np.zeros((rows, width), np.int32)
        self.padding_mask[:, :self.source_width] = padding_mask
        self.source_keys = padding_mask.astype(bool)
        if use_cache:  # slots: the source's S, then step 0's placeholder for a previous token (never read),
            # then one per target position
            self.cache_width = self.source_width + 1 + max_length
            keys = np.zeros((rows, self.source_width, self.cache_width), bool)
            keys[:, :, :self.source_width] = self.source_keys[:, None, :]
            self.caches = task.prefill_function(token_ids, keys)

    def __call__(self, step, parents, previous):
        """`(log_probabilities, token_ids)`, each `[rows, top_k]` (best first), of the token after
        `previous` (`[rows]`, None at step 0) for the rows continuing `parents` (`[rows]` row indices)."""
        for name in PACKED_INPUTS:
            setattr(self, name, getattr(self, name)[parents])
        position = self.lengths + step
        if previous is not None:
            self.token_ids[self.rows, position - 1] = previous
        self.token_ids[self.rows, position] = self.task.tokenizer.mask_token_id
        self.segment_ids[self.rows, position] = 1
        self.padding_mask[self.rows, position] = 1
        if not self.use_cache:
            outputs = self.task.uncached_step_function(self.token_ids, self.segment_ids, self.padding_mask,
                                                       position.astype(np.int32), self.top_k)
            return tuple(keras.ops.convert_to_numpy(output) for output in outputs)
        slot = self.source_width + step  # the previous token's slot; the [MASK] takes the next one
        scores, ids, self.caches = self.task.cached_step_function(
            self.caches, parents.astype(np.int32), self.token_ids, self.segment_ids,
            np.stack([position - 1, position], axis=1).astype(np.int32), self.step_mask(step),
            slot if keras.backend.backend() == "torch" else np.asarray(slot, np.int32),  # torch: eager, int is fast
            self.top_k)
        return keras.ops.convert_to_numpy(scores), keras.ops.convert_to_numpy(ids)

    def step_mask(self, step):
        """`[rows, 2, cache slots]`: what the previous token (query 0) and the `[MASK]` (query 1) may see:
        the real source tokens, the target tokens before them, themselves (never the unused slot S)."""
        mask = np.zeros((len(self.rows), 2, self.cache_width), bool)
        mask[:, :, :self.source_width] = self.source_keys[:, None, :]
        first = self.source_width + 1
        mask[:, 0, first:first + step] = True
        mask[:, 1, first:first + step + 1] = True
        return mask


def greedy_search(step, rows, max_length, end_token_id, no_repeat_ngram_size=0):
    """The most probable token at each step until `end_token_id` or `max_length` tokens: a list of
    `(tokens, log_probability)` per row, the end token left out of `tokens` and counted in the score.
    With `no_repeat_ngram_size=n`, a token that would repeat an n-gram of the row's target is never chosen
    (`step` must then return `max_length` more candidates than it otherwise would).

    Examples:
        >>> greedy_search(DecodingSteps(task, token_ids, padding_mask, 20, 1, 1, True), 2, 20, 102)
        [([2054, 2003, 1029], -2.31), ([2129, 2116, 1029], -3.05)]
    """
    every_row, previous = np.arange(rows), None  # greedy rows keep their own parents
    tokens = np.zeros((rows, 0), np.int64)
    scores, done = np.zeros(rows), np.zeros(rows, bool)
    for t in range(max_length):
        log_probabilities, ids = step(t, every_row, previous)
        log_probabilities = without_repeated_ngrams(log_probabilities, tokens, ids, no_repeat_ngram_size)
        best = log_probabilities.argmax(axis=1)  # the first allowed candidate: they come best first
        previous = np.where(done, end_token_id, ids[every_row, best])
        scores += np.where(done, 0.0, log_probabilities[every_row, best])
        tokens = np.concatenate([tokens, previous[:, None]], axis=1)
        done |= previous == end_token_id
        if done.all():
            break
    return [(without_end(row, end_token_id), float(score)) for row, score in zip(tokens, scores)]


def beam_search(step, sources, beam_size, max_length, end_token_id, length_penalty=1.0, no_repeat_ngram_size=0):
    """Beam search, as HF `generate(num_beams=beam_size, early_stopping=True)`: each step keeps the
    `beam_size` best unfinished continuations of every source; a continuation ending in `end_token_id`
    among the `beam_size` best becomes a hypothesis, scored by its summed log-probability divided by
    its length (end token included) to the power `length_penalty`; a source is done with `beam_size`
    hypotheses, or at `max_length` tokens, when its open beams count as hypotheses too. Returns the best
    `(tokens, score)` of each source. With `beam_size=1` it is `greedy_search`.

    `step` must return at least `2 * beam_size` candidates per row (or the whole vocabulary); with
    `no_repeat_ngram_size=n` (a continuation never repeats an n-gram of its own target, as HF's
    `no_repeat_ngram_size` and UniLM's `forbid_duplicate_ngrams`), `max_length` more.

    Examples:
        >>> beam_search(DecodingSteps(task, token_ids, padding_mask, 20, 4, 8, True), 2, 4, 20, 102)
    """
    rows = sources * beam_size
    beam_scores = np.full((sources, beam_size), -np.inf)
    beam_scores[:, 0] = 0.0  # the beams of a source start identical: expand one
    tokens = np.zeros((rows, 0), np.int64)
    hypotheses = [[] for _ in range(sources)]
    done = np.zeros(sources, bool)
    parents, previous = np.arange(rows), None
    for t in range(max_length):
        log_probabilities, ids = step(t, parents, previous)
        log_probabilities = without_repeated_ngrams(log_probabilities, tokens, ids, no_repeat_ngram_size)
        width = ids.shape[1]
        totals = (beam_scores[:, :, None] + log_probabilities.reshape(sources, beam_size, width)).reshape(sources, -1)
        ranked = np.argsort(-totals, axis=1, kind="stable")[:, :2 * beam_size]
        parents, previous = np.arange(rows), np.full(rows, end_token_id)
        for source in np.flatnonzero(~done):
            first, kept = source * beam_size, 0  # the source's first row; its beams kept so far
            for rank, flat in enumerate(ranked[source]):
                beam, candidate = divmod(int(flat), width)
                token, total = ids[first + beam, candidate], totals[source, flat]
                if token == end_token_id:
                    if rank < beam_size:
                        hypotheses[source].append((total / (t + 1) ** length_penalty, tokens[first + beam]))
                    continue
                parents[first + kept], previous[first + kept], beam_scores[source, kept] = first + beam, token, total
                kept += 1
                if kept == beam_size:
                    break
            done[source] = len(hypotheses[source]) >= beam_size
        tokens = np.concatenate([tokens[parents], previous[:, None]], axis=1)
        if done.all():
            break
    best = []
    for source in range(sources):
        found = hypotheses[source]
        if not done[source]:  # ran out of length: the open beams count too
            found = found + [(beam_scores[source, beam] / tokens.shape[1] ** length_penalty,
                              tokens[source * beam_size + beam]) for beam in range(beam_size)]
        score, row = max(found, key=lambda hypothesis: hypothesis[0])
        best.append((without_end(row, end_token_id), float(score)))
    return best


def without_repeated_ngrams(log_probabilities, tokens, ids, size):
    """`log_probabilities` (`[rows, k]`, of the candidate `ids`) with -inf where a candidate would end an n-gram
    of `size` tokens that the row's `tokens` (`[rows, t]`, its target so far) already hold; unchanged when
    `size` is 0. A row bans at most t candidates, so t more than needed always leave enough.

    Examples:
        >>> without_repeated_ngrams(np.array([[-0.1, -0.5]]), np.array([[7, 8, 7]]), np.array([[8, 9]]), 2).tolist()
        [[-inf, -0.5]]
    """
    if not size or tokens.shape[1] < size:
        return log_probabilities
    log_probabilities = log_probabilities.copy()
    t = tokens.shape[1]
    for row in range(len(tokens)):
        context = tokens[row, t - size + 1:]
        banned = {tokens[row, i + size - 1] for i in range(t - size + 1)
                  if np.array_equal(tokens[row, i:i + size - 1], context)}
        log_probabilities[row, np.isin(ids[row], list(banned))] = -np.inf
    return log_probabilities


def without_end(row, end_token_id):
    """The tokens of `row` before the first `end_token_id`, as a list of ints."""
    ends = np.flatnonzero(row == end_token_id)
    return [int(token) for token in row[:ends[0] if len(ends) else len(row)]]
