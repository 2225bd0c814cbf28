"""LAMB's steps equal optax's `lamb` chain with BERT's exclusions (no weight decay and no layer adaptation on
biases and LayerNorm), on every Keras backend."""

import keras
import numpy as np
import pytest

from kerasbert.training import Lamb, create_optimizer
from tests.training.test_optimizers import kernel_gradient

NAMES = ["kernel", "bias", "gamma"]


def optax_lamb_reference(start, grads, learning_rates, weight_decay, epsilon, clip):
    """optax: clip by global norm, Adam's scaled step, decayed weights and the trust ratio on the kernel only; in
    float64 (in float32 optax's `1 - 0.999**t` loses four digits early on, which kerasbert's step does not)."""
    optax = pytest.importorskip("optax", reason="the reference is optax: pip install optax")
    import jax

    with jax.enable_x64(True):
        return optax_lamb_steps(optax, start, grads, learning_rates, weight_decay, epsilon, clip)


def optax_lamb_steps(optax, start, grads, learning_rates, weight_decay, epsilon, clip):
    import jax.numpy as jnp

    decayed = {name: name == "kernel" for name in NAMES}
    learning_rates = iter(learning_rates)
    chain = optax.chain(
        optax.clip_by_global_norm(clip) if clip else optax.identity(),
        optax.scale_by_adam(b1=0.9, b2=0.999, eps=epsilon),
        optax.add_decayed_weights(weight_decay, mask=decayed),
        optax.masked(optax.scale_by_trust_ratio(), decayed),
        optax.scale_by_learning_rate(lambda count: next(learning_rates)),
    )
    params = {name: jnp.asarray(value, jnp.float64) for name, value in start.items()}
    state = chain.init(params)
    for grad in grads:
        updates, state = chain.update({name: jnp.asarray(value, jnp.float64) for name, value in grad.items()}, state, params)
        params = optax.apply_updates(params, updates)
    return {name: np.asarray(value) for name, value in params.items()}


@pytest.mark.all_backends
@pytest.mark.parametrize("clip", [None, 1.0])
def test_steps_equal_optax_lamb_with_berts_exclusions(clip):
    # Six steps of warmup then decay on a kernel (decayed and adapted, an embedding-style sparse gradient on
    # TensorFlow), a bias and a LayerNorm gamma (neither: trust ratio 1). Gradients of norm ~5 so clipping acts.
    rng = np.random.default_rng(0)
    start = {"kernel": rng.normal(size=(4, 3)).astype("float32"), "bias": rng.normal(size=3).astype("float32"),
             "gamma": (1 + 0.1 * rng.normal(size=3)).astype("float32")}
    grads = [{name: (2 * rng.normal(size=value.shape)).astype("float32") for name, value in start.items()}
             for _ in range(6)]
    optimizer = create_optimizer(total_steps=6, learning_rate=0.05, optimizer="lamb", global_clipnorm=clip)
    assert isinstance(optimizer, Lamb) and optimizer.epsilon == 1e-6
    variables = {name: keras.Variable(value, name=name) for name, value in start.items()}
    optimizer.build(list(variables.values()))
    learning_rates = []
    for grad in grads:
        learning_rates.append(float(optimizer.learning_rate))
        optimizer.apply_gradients([(kernel_gradient(grad["kernel"]), variables["kernel"])]
                                  + [(keras.ops.convert_to_tensor(grad[name]), variables[name]) for name in NAMES[1:]])
    reference = optax_lamb_reference(start, grads, learning_rates, 0.01, 1e-6, clip)
    for name in NAMES:
        np.testing.assert_allclose(variables[name].numpy(), reference[name], rtol=1e-6, atol=1e-7, err_msg=name)
    # The trust ratio matters: the kernel's steps differ from Adam's by > 1e-2 relative.
    adam_like = optax_lamb_reference({"kernel": start["kernel"], "bias": start["bias"], "gamma": start["gamma"]},
                                     grads, learning_rates, 0.0, 1e-6, clip)
    assert np.abs(variables["kernel"].numpy() - adam_like["kernel"]).max() > 1e-3


def test_lamb_saves_and_loads_with_its_settings():
    optimizer = create_optimizer(100, 1e-3, optimizer="lamb", gradient_accumulation_steps=4, layer_decay=0.8)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert isinstance(restored, Lamb)
    assert (restored.epsilon, restored.gradient_accumulation_steps, restored.layer_decay) == (1e-6, 4, 0.8)


@pytest.mark.parametrize("options, error", [
    ({"optimizer": "lars"}, "optimizer must be one of \\['adamw', 'lamb'\\]"),
    ({"gradient_accumulation_steps": 1}, "gradient_accumulation_steps must be an int >= 2"),
    ({"gradient_accumulation_steps": 2.0}, "gradient_accumulation_steps must be an int >= 2 or None, got float"),
])
def test_bad_settings_are_named(options, error):
    with pytest.raises((ValueError, TypeError), match=error):
        create_optimizer(100, 1e-3, **options)
