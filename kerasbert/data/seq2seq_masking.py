"""UniLM's sequence-to-sequence fine-tuning masks: target tokens replaced at random, the source left whole.

UniLM (Dong et al. 2019, section 2.3; `Preprocess4Seq2seq` in microsoft/unilm) fine-tunes a BERT encoder
for generation on packed `[CLS] source [SEP] target [SEP]` sequences by masking tokens of the target
only, the final `[SEP]` included (so that the model learns when to stop): `max(1, round(n * rate))` of
them, 0.7 of the target in the paper's fine-tuning, replaced by `[MASK]` 80% of the time, by a random
token 10%, and kept 10%. The masks are drawn anew each call (dynamic), with stateless random ops
seeded from a `tf.random.Generator`, inside `tf.data`.

Examples:
    >>> masker = TargetMasker(mask_token_id=103, drawable_token_ids=range(999, 30522), max_predictions=4,
    ...                       seed=0)
    >>> batch = {"token_ids": tf.constant([[101, 7592, 102, 2088, 2003, 102, 0]]),
    ...          "segment_ids": tf.constant([[0, 0, 0, 1, 1, 1, 0]]),
    ...          "padding_mask": tf.constant([[1, 1, 1, 1, 1, 1, 0]])}
    >>> inputs, mask_ids, mask_weights = masker(batch)
    >>> mask_weights.numpy().tolist()   # round(3 * 0.7) = 2 of the 3 target positions
    [[1.0, 1.0, 0.0, 0.0]]
"""

import numbers

import numpy as np
import tensorflow as tf

from kerasbert.data.mask_selection import select_tokens, selection_budget, selection_outputs
from kerasbert.data.masking import cpu_generator, is_bracketed

TARGET_SEGMENT = 1
UNILM_MASK_PROBABILITY = 0.7  # UniLM's fine-tuning for question generation and summarisation
MASK_TOKEN_RATE, RANDOM_TOKEN_RATE = 0.8, 0.1  # of the chosen tokens; the rest are kept


class TargetMasker:
    """Masks the target segment (segment 1) of packed batches for UniLM training (see the module docstring).

    Args:
        mask_token_id: the id of `[MASK]`.
        drawable_token_ids: the ids a chosen token may be replaced by at random (ordinary tokens).
        mask_probability: the fraction of each target (its final `[SEP]` counted) that is chosen.
        max_predictions: the most positions chosen per example (and the widest the outputs get).
        seed: int for reproducible masks; None for a nondeterministic start.

    Call with a batch dict of `[batch, T]` `token_ids`, `segment_ids` and `padding_mask` (dense, as
    `make_batched_dataset` gives). Returns Keras' `(inputs, mask_ids, mask_weights)`: `inputs` is the batch
    with the masked `token_ids` and int32 `mask_positions` `[batch, P]` (padded with 0; P: the batch's most
    chosen positions rounded up to a multiple of 8, at most `max_predictions`), `mask_ids` the original ids
    there and `mask_weights` 1.0 on real positions, 0.0 on padding.
    """

    def __init__(self, mask_token_id, drawable_token_ids, mask_probability=UNILM_MASK_PROBABILITY,
                 max_predictions=64, seed=None):
        drawable = np.asarray(list(drawable_token_ids), np.int64)
        if not isinstance(mask_probability, numbers.Real) or not 0 < mask_probability <= 1:
            raise ValueError(f"mask_probability must be a number in (0, 1] (UniLM: 0.7), got {mask_probability!r}.")
        if isinstance(max_predictions, bool) or not isinstance(max_predictions, numbers.Integral) \
                or max_predictions < 1:
            raise ValueError(f"max_predictions must be a positive int, got {max_predictions!r}.")
        if drawable.ndim != 1 or not len(drawable):
            raise ValueError("drawable_token_ids must list at least one token id to draw random replacements from.")
        self.mask_token_id = int(mask_token_id)
        self.mask_probability = float(mask_probability)
        self.max_predictions = int(max_predictions)
        self._drawable = tf.constant(drawable)
        self._generator = cpu_generator(seed)

    @classmethod
    def from_tokenizer(cls, tokenizer, **kwargs):
        """A masker for a `BertTokenizer`: random replacements drawn from the tokens that are not bracketed
        specials (`[CLS]`, `[unused0]`, ...); keyword arguments go to the constructor.

        Examples:
            >>> masker = TargetMasker.from_tokenizer(BertTokenizer.from_preset("all_minilm_l6_v2_en"), seed=0)
        """
        vocabulary = tokenizer.get_vocabulary()
        drawable = [i for i, token in enumerate(vocabulary) if not is_bracketed(token)]
        return cls(tokenizer.mask_token_id, drawable, **kwargs)

    def __call__(self, batch):
        ids = tf.cast(batch["token_ids"], tf.int64)
        seed = self._generator.make_seeds(1)[:, 0]
        selection_seed, decision_seed, random_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 3))
        target = (batch["segment_ids"] == TARGET_SEGMENT) & tf.cast(batch["padding_mask"], tf.bool)
        budget = selection_budget(target, self.mask_probability, self.max_predictions)
        selected = select_tokens(target, budget, selection_seed)
        decisions = tf.random.stateless_uniform(tf.shape(ids), decision_seed)
        draws = tf.random.stateless_uniform(tf.shape(ids), random_seed, maxval=tf.size(self._drawable, tf.int64),
                                            dtype=tf.int64)
        replacements = tf.where(decisions < MASK_TOKEN_RATE + RANDOM_TOKEN_RATE, tf.gather(self._drawable, draws), ids)
        replacements = tf.where(decisions < MASK_TOKEN_RATE, tf.constant(self.mask_token_id, tf.int64), replacements)
        masked = tf.cast(tf.where(selected, replacements, ids), batch["token_ids"].dtype)
        # Only as many slots as the batch needs (rounded up to 8, few shapes): each costs a vocabulary projection.
        width = tf.minimum(-(-tf.reduce_max(budget) // 8) * 8, self.max_predictions)
        outputs = {name: value[:, :width]
                   for name, value in selection_outputs(ids, selected, self.max_predictions).items()}
        inputs = {**batch, "token_ids": masked, "mask_positions": outputs["mask_positions"]}
        return inputs, outputs["mask_ids"], outputs["mask_weights"]
