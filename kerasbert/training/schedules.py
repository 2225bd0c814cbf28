"""Learning-rate schedule of BERT fine-tuning: linear warmup, then linear decay to zero."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kerasbert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Rises linearly from 0 to `peak_learning_rate` over `warmup_steps`, then falls linearly to 0
    at `total_steps` (the schedule of the BERT paper and of HF `get_linear_schedule_with_warmup`).

    Examples:
        >>> schedule = WarmupLinearDecay(5e-5, warmup_steps=10, total_steps=100)
        >>> float(schedule(5)), float(schedule(10)), float(schedule(100))
        (2.5e-05, 5e-05, 0.0)
    """

    def __init__(self, peak_learning_rate, warmup_steps, total_steps):
        if total_steps < 1 or not 0 <= warmup_steps <= total_steps:
            raise ValueError(
                f"Need 0 <= warmup_steps <= total_steps and total_steps >= 1, got "
                f"warmup_steps={warmup_steps}, total_steps={total_steps}."
            )
        self.peak_learning_rate = peak_learning_rate
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = ops.cast(max(self.warmup_steps, 1), "float32")
        rising = step / warmup
        falling = (self.total_steps - step) / max(self.total_steps - self.warmup_steps, 1)
        factor = ops.where(step < self.warmup_steps, rising, falling)
        return self.peak_learning_rate * ops.clip(factor, 0.0, 1.0)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
        }
