"""LAMB (You et al. 2020, "Large Batch Optimization for Deep Learning: Training BERT in 76 minutes").

Adam's step plus decoupled weight decay, scaled per variable by the trust ratio ||w|| / ||step||, so that
every layer moves by a similar fraction of its norm whatever the batch size. As in BERT's LAMB (TF Model
Garden, NVIDIA's recipe) the variables excluded from weight decay (biases, LayerNorm) are also excluded from
the layer adaptation: their trust ratio is 1. The step equals optax's `lamb` chain with those two masks
(tests/training/test_lamb.py).
"""

import keras
from keras import ops

from kerasbert.training.optimizers import AdamW


@keras.saving.register_keras_serializable(package="kerasbert")
class Lamb(AdamW):
    """LAMB with BERT's exclusions, on every Keras backend; kerasbert's AdamW options (global-norm clipping
    that sees the true norm of embedding gradients, `layer_decay`, `exclude_from_weight_decay`) carry over.

    For each variable `w` with gradient `g`, at step t:
    `step = m_hat / (sqrt(v_hat) + epsilon) + weight_decay * w` (no decay term for excluded variables),
    `w -= learning_rate * trust * step`, `trust = ||w|| / ||step||` (1 if either norm is 0, or `w` is excluded).

    Examples:
        >>> optimizer = Lamb(learning_rate=1e-3, weight_decay=0.01, epsilon=1e-6)
        >>> optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
        >>> optimizer = create_optimizer(1000, 1e-3, optimizer="lamb")  # the same, with warmup and decay
    """

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        if keras.backend.backend() == "torch":  # AdamW's fused torch kernels have no per-variable norms
            import torch

            with torch.no_grad():
                for gradient, variable in zip(grads, trainable_variables):
                    self.update_step(gradient, variable, learning_rate)
            return None
        return super()._backend_update_step(grads, trainable_variables, learning_rate)

    def update_step(self, gradient, variable, learning_rate):
        """One variable's LAMB step (see the class docstring)."""
        dtype = variable.dtype
        lr = ops.cast(learning_rate * self.rate_multiplier(variable), dtype)
        gradient = ops.cast(ops.convert_to_tensor(gradient), dtype)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        self.assign_add(m, (gradient - m) * (1 - self.beta_1))
        self.assign_add(v, (ops.square(gradient) - v) * (1 - self.beta_2))
        correction_1, correction_2 = self.bias_corrections(dtype)
        step = (m / correction_1) / (ops.sqrt(v / correction_2) + self.epsilon)
        if self._use_weight_decay(variable):
            step = step + ops.cast(self.weight_decay, dtype) * variable
            weight_norm, step_norm = ops.norm(ops.reshape(variable, [-1])), ops.norm(ops.reshape(step, [-1]))
            trust = ops.where((weight_norm > 0) & (step_norm > 0), weight_norm / step_norm, ops.ones_like(step_norm))
            step = step * trust
        self.assign_sub(variable, lr * step)
