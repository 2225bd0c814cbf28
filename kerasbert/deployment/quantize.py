"""Post-training int8 of a task model through Keras' `quantize`, recorded in its config so files reload quantised.

Every Dense kernel (the fused QKV kernel included) and embedding table becomes int8 with a float scale per output
(per row for embeddings); LayerNorms, biases and the task's logits layer stay float32. Activations are quantised per
token on the fly (int8 x int8 products), or with `weight_only=True` kept in float (each kernel is scaled back to
float before its product: closer to float32, and on CPUs without fast int8 kernels faster). The model saves to
`.keras` (reloaded quantised) and exports; it is for inference, not for more training.

Examples:
    >>> classifier.quantize("int8")                       # Task.quantize calls quantize_task
    >>> classifier.save("sentiment_int8.keras")
"""

import contextlib
import gc

import keras

# The layer types Keras quantises (subclasses such as the deferred logits layer stay float).
QUANTIZABLE_LAYERS = (keras.layers.Dense, keras.layers.EinsumDense, keras.layers.Embedding)
WEIGHT_ONLY_INT8 = "int8_weight_only"  # the saved `quantization` of `quantize("int8", weight_only=True)`


def quantizable(layer):
    """Whether `quantize_task` turns `layer` int8 (quantisation-aware fine-tuning rounds the same layers)."""
    return type(layer) in QUANTIZABLE_LAYERS


def quantize_task(model, mode="int8", weight_only=False, config=None, **kwargs):
    """Quantise `model` (a Task) in place and return the mode to record: "int8" or `WEIGHT_ONLY_INT8`.

    Every Dense kernel (the fused QKV kernel included) and embedding table becomes int8 with a float scale per
    output (per row for embeddings); LayerNorms, biases and the task's logits layer stay float32. Activations are
    quantised per token on the fly, or with `weight_only=True` kept in float.
    """
    if mode != "int8":
        raise ValueError(f"mode={mode!r}: kerasbert task models quantise to 'int8' (weights and activations, or "
                         "weight_only=True), which their saved files record.")
    if model.quantization is not None:
        raise ValueError(
            f"This {type(model).__name__} is already quantised ({model.quantization}); quantising again would "
            "round the rounded weights. Quantise the float model once (reload it from its float file)."
        )
    if weight_only:  # `config` is the default Keras made of `mode` (Layer's quantize wrapper)
        config = keras.quantizers.Int8QuantizationConfig(activation_quantizer=None)
    with one_garbage_collection():
        keras.Model.quantize(model, None if weight_only else mode, config=config,
                             filters=quantizable, **kwargs)
    return WEIGHT_ONLY_INT8 if weight_only else mode


@contextlib.contextmanager
def one_garbage_collection():
    """Run the body with `gc.collect` deferred to its end.

    Keras collects garbage each time a layer drops a float kernel for its int8 one (to free device buffers at
    once): 28 full collections, 94% of quantising MiniLM (10 s) and of reloading an int8 file. One at the end
    frees the same buffers.
    """
    collect = gc.collect
    gc.collect = lambda generation=2: 0
    try:
        yield
    finally:
        gc.collect = collect
        collect()
