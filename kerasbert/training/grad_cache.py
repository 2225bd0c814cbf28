"""GradCache (Gao et al., 2021), as sentence-transformers' cached losses: one training step of an encoder loss over a
batch larger than memory allows, a mini-batch of texts at a time.

1. Embed the batch in mini-batches of `mini_batch_size` texts without keeping their activations (dropout on, each
   mini-batch's random state noted).
2. The loss of the whole batch of embeddings, and its gradient with respect to each embedding.
3. Embed each mini-batch again, with the same dropout masks (its random state restored), and back-propagate the
   gradient of step 2 through it; the weights' gradients add up over the mini-batches.

The gradient is the loss's over the whole batch (every text a negative of every other), while the activations of
one mini-batch are alive at a time. The step is the backend's own (TensorFlow, JAX, torch), dispatched here.

Examples:
    >>> encoder.fit(pairs, batch_size=1024, loss=CachedMultipleNegativesRankingLoss(mini_batch_size=64))
"""

import keras
from keras import ops


def is_seed_state(variable):
    return variable.name == "seed_generator_state"


def rows_of(x):
    return next(value for value in keras.tree.flatten(x) if value is not None).shape[0]


def chunk_of(x, start, size):
    return keras.tree.map_structure(lambda value: value[start:start + size], x)


def train_step(model, mini_batch_size, *args):
    """The cached step of `model` (a task whose compiled loss reads embeddings) on this backend's train-step
    arguments (`data`, or `state, data` on JAX)."""
    backend = keras.backend.backend()
    if backend == "jax":
        return jax_step(model, mini_batch_size, *args)
    if backend == "torch":
        return torch_step(model, mini_batch_size, *args)
    return tensorflow_step(model, mini_batch_size, *args)


def tensorflow_step(model, size, data):
    import tensorflow as tf

    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    rows = tf.shape(next(value for value in keras.tree.flatten(x) if value is not None))[0]
    count = (rows + size - 1) // size
    seeds = [variable for variable in model.non_trainable_variables if is_seed_state(variable)]
    weights = model.trainable_weights

    def embed(i, embeddings, states):
        states = tuple(noted.write(i, seed.value) for noted, seed in zip(states, seeds))
        with tf.control_dependencies([noted.flow for noted in states]):
            vectors = tf.stop_gradient(model(chunk_of(x, i * size, size), training=True))
        return i + 1, embeddings.write(i, vectors), states

    output = model.outputs[0]
    _, embeddings, states = tf.while_loop(
        lambda i, *_: i < count, embed,
        (0, tf.TensorArray(output.dtype, size=count, infer_shape=False, element_shape=(None, *output.shape[1:])),
         tuple(tf.TensorArray(seed.dtype, size=count) for seed in seeds)))
    y_pred = tf.ensure_shape(embeddings.concat(), (None, *output.shape[1:]))
    with tf.control_dependencies([y_pred]):
        end_states = [tf.identity(seed.value) for seed in seeds]
    with tf.GradientTape() as tape:
        tape.watch(y_pred)
        loss = model._compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)
        model._loss_tracker.update_state(loss, sample_weight=rows)
        scaled = model.optimizer.scale_loss(loss)
    upstream = tape.gradient(scaled, y_pred)

    def back_propagate(i, gradients):
        restored = [seed.assign(noted.read(i)) for seed, noted in zip(seeds, states)]
        with tf.control_dependencies(restored), tf.GradientTape() as chunk_tape:
            vectors = model(chunk_of(x, i * size, size), training=True)
        added = chunk_tape.gradient(vectors, weights, output_gradients=upstream[i * size:(i + 1) * size])
        return i + 1, tuple(total if grad is None else total + grad for total, grad in zip(gradients, added))

    _, gradients = tf.while_loop(lambda i, *_: i < count, back_propagate,
                                 (0, tuple(tf.zeros_like(weight) for weight in weights)))
    with tf.control_dependencies(list(gradients)):
        for seed, state in zip(seeds, end_states):
            seed.assign(state)
    model.optimizer.apply_gradients(zip(gradients, weights))
    return model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)


def torch_step(model, size, data):
    """Keras' dropout on torch draws from torch's own generators where a layer has no seed: their states are noted
    and restored with the seed generators' (as sentence-transformers' `RandContext`)."""
    import torch

    def random_state():
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
        return [seed.value.clone() for seed in seeds], torch.get_rng_state(), cuda

    def restore(state):
        values, cpu, cuda = state
        for seed, value in zip(seeds, values):
            seed.assign(value)
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)

    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    rows = rows_of(x)
    seeds = [variable for variable in model.non_trainable_variables if is_seed_state(variable)]
    starts, states, embeddings = range(0, rows, size), [], []
    with torch.no_grad():
        for start in starts:
            states.append(random_state())
            embeddings.append(model(chunk_of(x, start, size), training=True))
    end_state = random_state()
    y_pred = torch.cat(embeddings).detach().requires_grad_(True)
    model.zero_grad()
    loss = model._compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)
    model._loss_tracker.update_state(loss, sample_weight=rows)
    model.optimizer.scale_loss(loss).backward()
    upstream = y_pred.grad
    for start, state in zip(starts, states):
        restore(state)
        model(chunk_of(x, start, size), training=True).backward(upstream[start:start + size])
    restore(end_state)
    weights = model.trainable_weights[:]
    with torch.no_grad():
        model.optimizer.apply([weight.value.grad for weight in weights], weights)
    return model.compute_metrics(x, y, y_pred.detach(), sample_weight=sample_weight)


def jax_step(model, size, state, data):
    import jax

    trainable, non_trainable, optimizer_variables, metrics_variables = state
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    rows = rows_of(x)
    starts, states, embeddings = range(0, rows, size), [], []
    for start in starts:  # shapes are static under jit: a Python loop
        states.append(non_trainable)
        vectors, non_trainable = model.stateless_call(trainable, non_trainable, chunk_of(x, start, size),
                                                      training=True)
        embeddings.append(jax.lax.stop_gradient(vectors))
    y_pred = ops.concatenate(embeddings, axis=0)

    def scaled_loss(y_pred):
        loss, (_, _, metrics) = model.stateless_compute_loss(trainable, non_trainable, metrics_variables, x=x, y=y,
                                                             y_pred=y_pred, sample_weight=sample_weight,
                                                             training=True)
        mapping = list(zip(model.optimizer.variables, optimizer_variables))
        with keras.StatelessScope(state_mapping=mapping):
            return model.optimizer.scale_loss(loss), (loss, metrics)

    (_, (loss, metrics_variables)), upstream = jax.value_and_grad(scaled_loss, has_aux=True)(y_pred)
    gradients = None
    for start, noted in zip(starts, states):
        # a barrier, so that XLA does not merge this pass with the first one (keeping every chunk's activations)
        chunk, noted, chunk_upstream = jax.lax.optimization_barrier(
            (chunk_of(x, start, size), noted, upstream[start:start + size]))
        _, pull_back = jax.vjp(lambda weights: model.stateless_call(weights, noted, chunk, training=True)[0],
                               trainable)
        (added,) = pull_back(chunk_upstream)
        gradients = added if gradients is None else jax.tree_util.tree_map(ops.add, gradients, added)
    trainable, optimizer_variables = model.optimizer.stateless_apply(optimizer_variables, gradients, trainable)
    logs, metrics_variables = model._update_metrics_variables(metrics_variables, loss, x, y, y_pred, sample_weight)
    return logs, (trainable, non_trainable, optimizer_variables, metrics_variables)
