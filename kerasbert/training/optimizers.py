"""kerasbert's AdamW: torch's update (HF `Trainer`'s) on every Keras backend, layer-wise rate decay.

The update is torch's `AdamW` (HF `Trainer`'s) on every Keras backend: written with keras.ops, with a
fused kernel per backend where one exists (TensorFlow's `ResourceApplyAdam`, torch's `_foreach` ops).
"""

import math
import re

import keras
from keras import ops

from kerasbert.arguments import check_number


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
    until this matched it (tests/training/test_pretraining_matches_hf.py). JAX and torch hand over
    dense embedding gradients, whose norm Keras computes right.

    Under `tf.distribute` (MirroredStrategy, TPUStrategy) the gradients are summed over replicas
    before the clipping, not after: Keras clips each replica's partial gradient by its own norm, so
    two replicas took other steps than one device with the same global batch.

    The same update runs on every backend: TensorFlow uses one fused `ResourceApplyAdam` kernel per
    variable, torch a handful of `_foreach` kernels over all variables, JAX keras.ops under `jit`.

    Examples:
        >>> optimizer = AdamW(learning_rate=5e-5, weight_decay=0.01, epsilon=1e-8)
    """

    def __init__(self, *args, amsgrad=False, layer_decay=None, **kwargs):
        if amsgrad:
            raise ValueError("kerasbert's AdamW has no AMSGrad variant; for AMSGrad compile with "
                             "keras.optimizers.AdamW(amsgrad=True).")
        if layer_decay is not None:
            check_number("layer_decay", layer_decay, 0, 1, low_open=True, hint=" e.g. 0.9.")
        super().__init__(*args, **kwargs)
        self.layer_decay = layer_decay
        self.rate_multipliers = None

    def build(self, variables):
        """Create the moments and, with `layer_decay`, each variable's learning-rate multiplier
        (`layer_rate_multipliers`)."""
        super().build(variables)
        if self.layer_decay is not None:
            self.rate_multipliers = layer_rate_multipliers([variable.path for variable in variables], self.layer_decay)

    def rate_multiplier(self, variable):
        """The factor of the learning rate for `variable` (1 without `layer_decay`)."""
        if self.rate_multipliers is None:
            return 1.0
        return self.rate_multipliers[self._get_variable_index(variable)]

    def get_config(self):
        return {**super().get_config(), "layer_decay": self.layer_decay}

    def _get_current_learning_rate(self):
        # A schedule counts updates (as HF Trainer's scheduler), not accumulated batches as Keras does.
        if isinstance(self._learning_rate, keras.optimizers.schedules.LearningRateSchedule):
            return self._learning_rate(self.iterations)
        return super()._get_current_learning_rate()

    def _clip_gradients(self, grads):
        return super()._clip_gradients(summed_over_replicas([summed_slices(g) for g in grads]))

    def _all_reduce_sum_gradients(self, grads_and_vars):
        # TensorFlow: `_clip_gradients` has summed them over replicas already (see summed_over_replicas).
        return grads_and_vars

    def _apply_weight_decay(self, variables):
        # Done in the update instead, with the learning rate computed once per step (Keras
        # evaluates the schedule again for every variable: hundreds of graph ops to trace).
        pass

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        if keras.backend.backend() == "torch":
            groups = {}  # one fused update per learning-rate multiplier
            for gradient, variable in zip(grads, trainable_variables):
                group = groups.setdefault(self.rate_multiplier(variable), ([], []))
                group[0].append(gradient)
                group[1].append(variable)
            for multiplier, (group_grads, group_variables) in groups.items():
                self._torch_update_step(group_grads, group_variables, learning_rate * multiplier)
            return None
        return super()._backend_update_step(grads, trainable_variables, learning_rate)

    def bias_corrections(self, dtype):
        """`(1 - beta_1^t, 1 - beta_2^t)` of the step being taken, as `dtype` scalars.

        Computed as `-expm1(t * log(beta))`: in float32, `1 - 0.999^t` loses five digits to
        cancellation early in training (torch computes it in Python doubles).
        """
        step = ops.cast(self.iterations + 1, dtype)
        return tuple(-ops.expm1(step * math.log(beta)) for beta in (self.beta_1, self.beta_2))

    def update_step(self, gradient, variable, learning_rate):
        """Decoupled weight decay, then Adam with torch's epsilon placement, on one variable.

        With `alpha = lr * sqrt(1 - b2^t) / (1 - b1^t)` and `eps' = eps * sqrt(1 - b2^t)`,
        `variable -= alpha * m / (sqrt(v) + eps')` equals torch's `lr * m_hat / (sqrt(v_hat) + eps)`.
        """
        learning_rate = learning_rate * self.rate_multiplier(variable)
        if keras.backend.backend() == "tensorflow":
            return self._tensorflow_update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        lr = ops.cast(learning_rate, dtype)
        gradient = ops.cast(gradient, dtype)
        if self._use_weight_decay(variable):
            self.assign_sub(variable, variable * (lr * ops.cast(self.weight_decay, dtype)))
        correction_1, correction_2 = self.bias_corrections(dtype)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        self.assign_add(m, (gradient - m) * (1 - self.beta_1))
        self.assign_add(v, (ops.square(gradient) - v) * (1 - self.beta_2))
        alpha = lr * ops.sqrt(correction_2) / correction_1
        epsilon = self.epsilon * ops.sqrt(correction_2)
        self.assign_sub(variable, m * alpha / (ops.sqrt(v) + epsilon))

    def _tensorflow_update_step(self, gradient, variable, learning_rate):
        """The same update as one `ResourceApplyAdam` kernel (it takes `eps'` as its epsilon)."""
        import tensorflow as tf

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

    def _torch_update_step(self, grads, trainable_variables, learning_rate):
        """The same update over all variables at once with torch's `_foreach` kernels."""
        import torch

        with torch.no_grad():
            values = [variable.value for variable in trainable_variables]
            indices = [self._get_variable_index(variable) for variable in trainable_variables]
            m_list = [self._momentums[i].value for i in indices]
            v_list = [self._velocities[i].value for i in indices]
            grads = [g.to(value.dtype) for g, value in zip(grads, values)]
            dtype = values[0].dtype
            lr = ops.cast(learning_rate, dtype)
            decayed = [value for variable, value in zip(trainable_variables, values)
                       if self._use_weight_decay(variable)]
            if decayed and self.weight_decay:
                torch._foreach_mul_(decayed, 1 - lr * self.weight_decay)
            correction_1, correction_2 = self.bias_corrections(dtype)
            torch._foreach_lerp_(m_list, grads, 1 - self.beta_1)
            torch._foreach_mul_(v_list, self.beta_2)
            torch._foreach_addcmul_(v_list, grads, grads, value=1 - self.beta_2)
            alpha = lr * torch.sqrt(correction_2) / correction_1
            denominators = torch._foreach_sqrt(v_list)
            torch._foreach_add_(denominators, self.epsilon * torch.sqrt(correction_2))
            steps = torch._foreach_div(m_list, denominators)
            torch._foreach_mul_(steps, alpha)
            torch._foreach_sub_(values, steps)


BLOCK_PATH = re.compile(r"(?:^|/)encoder_block_(\d+)/")


def layer_rate_multipliers(paths, layer_decay):
    """Layer-wise learning-rate decay (ELECTRA, BEiT): `layer_decay ** (L + 1 - depth)` for each variable path,
    where depth is 0 for the embeddings, i + 1 for `encoder_block_i` and L + 1 for everything above the L
    blocks (pooler, final LayerNorm, task head), which keeps the full rate.

    Examples:
        >>> layer_rate_multipliers(["embedding/token_embedding/embeddings", "encoder_block_0/attention/qkv_dense/kernel",
        ...                         "encoder_block_1/output_dense/kernel", "logits/kernel"], 0.5)
        [0.125, 0.25, 0.5, 1.0]
    """
    blocks = [int(match.group(1)) for match in map(BLOCK_PATH.search, paths) if match]
    num_layers = max(blocks) + 1 if blocks else 0

    def depth(path):
        match = BLOCK_PATH.search(path)
        if match:
            return int(match.group(1)) + 1
        return 0 if path.startswith("embedding/") or "/embedding/" in path else num_layers + 1

    return [float(layer_decay ** (num_layers + 1 - depth(path))) for path in paths]


def summed_slices(gradient):
    """A `tf.IndexedSlices` gradient with its duplicate indices summed (one slice per row); other
    gradients (and every gradient of the JAX and torch backends) unchanged.

    Examples:
        >>> g = tf.IndexedSlices(tf.ones((3, 2)), tf.constant([4, 4, 1]), tf.constant([5, 2]))
        >>> summed_slices(g).values.numpy().tolist()
        [[2.0, 2.0], [1.0, 1.0]]
    """
    if keras.backend.backend() != "tensorflow":
        return gradient
    import tensorflow as tf

    if not isinstance(gradient, tf.IndexedSlices):
        return gradient
    rows, positions = tf.unique(gradient.indices)
    values = tf.math.unsorted_segment_sum(gradient.values, positions, tf.shape(rows)[0])
    return tf.IndexedSlices(values, rows, gradient.dense_shape)


def summed_over_replicas(grads):
    """TensorFlow, inside a `tf.distribute` replica step with several replicas: the gradients summed
    over the replicas (what Keras does after clipping; done here so the clip sees the global norm),
    embedding gradients as dense tensors, as torch's DistributedDataParallel sums them. Otherwise unchanged. `None` gradients (weights the loss does not reach) stay `None`."""
    if keras.backend.backend() != "tensorflow":
        return grads
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return grads
    # Dense: replicas see different tokens, so their IndexedSlices differ in shape, which collectives reject.
    present = [tf.convert_to_tensor(g) for g in grads if g is not None]
    reduced = iter(context.all_reduce(tf.distribute.ReduceOp.SUM, present) if present else [])
    return [None if g is None else next(reduced) for g in grads]
