"""The activations of kerasbert's layers, by the names HF configs use."""

import keras

# HF `hidden_act` names and their exact keras equivalents.
ACTIVATIONS = {
    "gelu": lambda x: keras.activations.gelu(x, approximate=False),
    "gelu_approximate": lambda x: keras.activations.gelu(x, approximate=True),
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
