"""The activations of kerasbert's layers, by the names HF configs use."""

import keras
from keras import ops


def in_float32_on_tensorflow(activation):
    """`activation` computed in float32 for bfloat16/float16 inputs on TensorFlow, cast back: its CPU kernels
    for erf and tanh in 16 bits are slower than casting (bert_small's intermediate GELU, 4,096 x 2,048 in
    bfloat16 on an AMX Xeon: 49.8 ms as is, 24.3 ms through float32, where the matmul before it takes 13 ms;
    docs/results.md), and float32 is the more exact. Other backends keep their 16-bit kernels."""
    def activation_fn(x):
        dtype = keras.backend.standardize_dtype(x.dtype)
        if dtype in ("bfloat16", "float16") and keras.config.backend() == "tensorflow":
            return ops.cast(activation(ops.cast(x, "float32")), dtype)
        return activation(x)

    return activation_fn


def exact_gelu(x):
    """The exact (erf) GELU. TensorFlow's own, `0.5 x erfc(-x / sqrt 2)`, runs a scalar erfc kernel on CPU:
    `0.5 x (1 + erf(x / sqrt 2))` is the same function (7e-7 apart on N(0, 1) float32 inputs) in 8.2 ms against
    13.9 for MiniLM's 4,096 x 1,536 intermediate on a 2-core Xeon (`erf` is vectorised, `erfc` is not). Other
    backends keep their fused GELU kernels."""
    if keras.config.backend() == "tensorflow":
        return 0.5 * x * (1.0 + ops.erf(x * ops.cast(0.7071067811865476, x.dtype)))
    return keras.activations.gelu(x, approximate=False)


# HF `hidden_act` names and their exact keras equivalents.
ACTIVATIONS = {
    "gelu": in_float32_on_tensorflow(exact_gelu),
    "gelu_approximate": in_float32_on_tensorflow(lambda x: keras.activations.gelu(x, approximate=True)),
    "relu": keras.activations.relu,
    "silu": keras.activations.silu,
}


def get_activation(name):
    """Look up an activation by name: "gelu" (exact erf), "gelu_approximate" (tanh), "relu", "silu".

    Examples:
        >>> float(get_activation("gelu")(ops.array(1.0)))  # doctest: +ELLIPSIS
        0.841...
    """
    if name not in ACTIVATIONS:
        raise ValueError(
            f"Unknown activation {name!r}; use one of {sorted(ACTIVATIONS)} "
            "(\"gelu\" is the exact erf GELU of HF checkpoints, \"gelu_approximate\" the tanh "
            "form of the original Google BERT)."
        )
    return ACTIVATIONS[name]
