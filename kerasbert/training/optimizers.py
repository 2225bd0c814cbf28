"""Default optimizer of kerasbert fine-tuning: AdamW, warmup + linear decay, no decay on norms and biases."""

import keras

from kerasbert.training.schedules import WarmupLinearDecay

# Variable names that are excluded from weight decay: every bias, LayerNorm gamma and beta.
NO_DECAY_NAMES = ["bias", "gamma", "beta"]


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
    """AdamW with `WarmupLinearDecay`, no weight decay on biases and LayerNorm, gradients clipped
    to a global norm of 1 (the settings of HF `Trainer`).

    Example:
    >>> optimizer = create_optimizer(total_steps=1000, learning_rate=5e-5)
    """
    schedule = WarmupLinearDecay(learning_rate, int(round(warmup_fraction * total_steps)), total_steps)
    optimizer = keras.optimizers.AdamW(
        learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9, beta_2=0.999,
        epsilon=1e-8, global_clipnorm=global_clipnorm,
    )
    optimizer.exclude_from_weight_decay(var_names=NO_DECAY_NAMES)
    return optimizer
