"""ReplacementSampler: ELECTRA's corruption step, the generator's samples put in place of the masked tokens."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kerasbert")
class ReplacementSampler(keras.layers.Layer):
    """Samples a token from the generator's softmax at each masked position and writes it into the sequence.

    The sample at a position is the first token whose cumulative probability exceeds that position's
    `sampling_uniforms` value (inverse-CDF sampling: a draw from the categorical distribution of the logits,
    temperature 1, as ELECTRA's `sample_from_softmax`). The uniforms come with the data, seeded like the masks,
    so a step's replacements are reproducible on every backend and can be given explicitly. No gradient flows
    into the generator through the samples (ELECTRA's stop-gradient).

    Call args:
        generator_logits: float `[batch, P, vocabulary]` logits at the masked positions.
        token_ids: int `[batch, T]`, the generator's (masked) input.
        mask_positions, mask_ids: int `[batch, P]`, the masked positions and their original ids;
            mask_weights: `[batch, P]`, 0 on padding slots (which change nothing).
        sampling_uniforms: float `[batch, P]` in [0, 1).

    Returns a dict: `sampled_ids` int32 `[batch, P]`; `corrupted_ids` int32 `[batch, T]` (the discriminator's
    input: the original ids with the samples at the masked positions); `replaced` float32 `[batch, T]`, 1.0
    where the sample differs from the original token (the discriminator's label; a sample equal to the
    original counts as original, as in ELECTRA).

    Examples:
        >>> out = ReplacementSampler()(logits, masked_ids, positions, original_ids, weights, uniforms)
        >>> sorted(out)
        ['corrupted_ids', 'replaced', 'sampled_ids']
    """

    def call(self, generator_logits, token_ids, mask_positions, mask_ids, mask_weights, sampling_uniforms):
        probabilities = ops.softmax(ops.stop_gradient(ops.cast(generator_logits, "float32")), axis=-1)
        cumulative = ops.cumsum(probabilities, axis=-1)
        # Scaled by the total, which float rounding leaves a little off 1.
        threshold = ops.cast(sampling_uniforms, "float32")[:, :, None] * cumulative[:, :, -1:]
        sampled = ops.sum(ops.cast(cumulative <= threshold, "int32"), axis=-1)
        sampled = ops.minimum(sampled, ops.shape(generator_logits)[-1] - 1)
        token_ids = ops.cast(token_ids, "int32")
        # at[b, p, t]: slot p (a real selection) is position t
        positions = ops.arange(ops.shape(token_ids)[1], dtype="int32")
        at = ops.logical_and(ops.equal(ops.cast(mask_positions, "int32")[:, :, None], positions[None, None, :]),
                             ops.cast(mask_weights, "float32")[:, :, None] > 0)
        chosen = ops.any(at, axis=1)
        sample_there = ops.sum(ops.where(at, sampled[:, :, None], 0), axis=1)
        original_there = ops.sum(ops.where(at, ops.cast(mask_ids, "int32")[:, :, None], 0), axis=1)
        corrupted = ops.where(chosen, sample_there, token_ids)
        replaced = ops.cast(ops.logical_and(chosen, ops.not_equal(sample_there, original_there)), "float32")
        return {"sampled_ids": sampled, "corrupted_ids": corrupted, "replaced": replaced}

    def compute_output_spec(self, generator_logits, token_ids, mask_positions, mask_ids, mask_weights,
                            sampling_uniforms):
        return {"sampled_ids": keras.KerasTensor(mask_positions.shape, "int32"),
                "corrupted_ids": keras.KerasTensor(token_ids.shape, "int32"),
                "replaced": keras.KerasTensor(token_ids.shape, "float32")}
