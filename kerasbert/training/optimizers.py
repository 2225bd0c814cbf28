"""Default optimizer of kerasbert fine-tuning: AdamW, warmup + linear decay, no decay on norms and biases."""

import math

import keras
import tensorflow as tf

from kerasbert.training.schedules import WarmupLinearDecay

# Variable names that are excluded from weight decay: every bias, LayerNorm gamma and beta.
NO_DECAY_NAMES = ["bias", "gamma", "beta"]


@keras.saving.register_keras_serializable(package="kerasbert")
class AdamW(keras.optimizers.AdamW):
    """Keras AdamW with the epsilon where torch's `AdamW` (and so HF `Trainer`) puts it.

    Keras adds `epsilon` to sqrt(v) before bias correction, torch after it:
    `variable -= lr * m_hat / (sqrt(v_hat) + epsilon)`. Early in training, and for weights with small
    gradients, Keras' form takes smaller steps: fine-tuning measurably trailed HF's loss on the same
    weights and batches until this matched it (tests/training/test_fine_tuning_matches_hf_trainer.py).

    It also clips by the true global norm when embedding gradients come as `tf.IndexedSlices` (one
    slice per lookup, so a token seen twice has two): Keras squares the slices before summing the
    duplicates, which misjudges the norm and so the clipping factor; torch's `clip_grad_norm_` sees the
    summed gradient. Pre-training, whose gradients exceed the clip norm, took different steps from HF's
    until this matched it (tests/training/test_pretraining_matches_hf.py).

    Example:
    >>> optimizer = AdamW(learning_rate=5e-5, weight_decay=0.01, epsilon=1e-8)
    """

    def __init__(self, *args, amsgrad=False, **kwargs):
        if amsgrad:
            raise ValueError("kerasbert's AdamW has no AMSGrad variant; for AMSGrad compile with "
                             "keras.optimizers.AdamW(amsgrad=True).")
        super().__init__(*args, **kwargs)

    def _clip_gradients(self, grads):
        return super()._clip_gradients([summed_slices(g) for g in grads])

    def _apply_weight_decay(self, variables):
        # Done in `update_step` instead, with the learning rate computed once per step (Keras
        # evaluates the schedule again for every variable: hundreds of graph ops to trace).
        pass

    def update_step(self, gradient, variable, learning_rate):
        """Decoupled weight decay, then one fused Adam kernel (`ResourceApplyAdam`) per variable.

        The kernel computes `variable -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps')`;
        with `eps' = eps * sqrt(1 - b2^t)` that equals torch's `lr * m_hat / (sqrt(v_hat) + eps)`.
        """
        variable = variable.value if isinstance(variable, keras.Variable) else variable
        lr = tf.cast(learning_rate, variable.dtype)
        if self._use_weight_decay(variable):
            variable.assign_sub(variable * (lr * tf.cast(self.weight_decay, variable.dtype)))
        index = self._get_variable_index(variable)
        step = tf.cast(self.iterations + 1, variable.dtype)
        beta_1 = tf.cast(self.beta_1, variable.dtype)
        beta_2 = tf.cast(self.beta_2, variable.dtype)
        beta_2_power = tf.pow(beta_2, step)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].value.handle,
            v=self._velocities[index].value.handle,
            beta1_power=tf.pow(beta_1, step),
            beta2_power=beta_2_power,
            lr=lr,
            beta1=beta_1,
            beta2=beta_2,
            epsilon=self.epsilon * tf.sqrt(1 - beta_2_power),
            grad=tf.cast(tf.convert_to_tensor(gradient), variable.dtype),
        )


def summed_slices(gradient):
    """A `tf.IndexedSlices` gradient with its duplicate indices summed (one slice per row); other
    gradients unchanged.

    Example:
    >>> g = tf.IndexedSlices(tf.ones((3, 2)), tf.constant([4, 4, 1]), tf.constant([5, 2]))
    >>> summed_slices(g).values.numpy().tolist()
    [[2.0, 2.0], [1.0, 1.0]]
    """
    if not isinstance(gradient, tf.IndexedSlices):
        return gradient
    rows, positions = tf.unique(gradient.indices)
    values = tf.math.unsorted_segment_sum(gradient.values, positions, tf.shape(rows)[0])
    return tf.IndexedSlices(values, rows, gradient.dense_shape)


def default_learning_rate(hidden_dim):
    """A fine-tuning learning rate suited to the model size (BERT paper range 2e-5 .. 5e-5).

    Example:
    >>> default_learning_rate(384), default_learning_rate(768), default_learning_rate(1024)
    (5e-05, 3e-05, 2e-05)
    """
    if hidden_dim <= 512:
        return 5e-5
    if hidden_dim <= 768:
        return 3e-5
    return 2e-5


def create_optimizer(total_steps, learning_rate, warmup_fraction=0.1, weight_decay=0.01,
                     global_clipnorm=1.0):
    """AdamW (torch's epsilon placement) with `WarmupLinearDecay`, no weight decay on biases and
    LayerNorm, gradients clipped to a global norm of 1 (the settings of HF `Trainer`).

    Example:
    >>> optimizer = create_optimizer(total_steps=1000, learning_rate=5e-5)
    """
    # HF Trainer's `get_warmup_steps`: ceil(warmup_ratio * total_steps).
    schedule = WarmupLinearDecay(learning_rate, math.ceil(warmup_fraction * total_steps), total_steps)
    optimizer = AdamW(
        learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9, beta_2=0.999,
        epsilon=1e-8, global_clipnorm=global_clipnorm,
    )
    optimizer.exclude_from_weight_decay(var_names=NO_DECAY_NAMES)
    return optimizer
