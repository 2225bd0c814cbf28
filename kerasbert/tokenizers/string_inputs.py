"""Turning what users pass as text (str, list, NumPy, pandas, tf tensors) into a `tf.string` tensor."""

import tensorflow as tf


def to_string_tensor(texts, layer_name):
    """A `tf.string` Tensor or RaggedTensor holding `texts`; TypeError for anything that is not text.

    Examples:
        >>> to_string_tensor(["a b", "c"], "BertTokenizer").shape
        TensorShape([2])
    """
    if isinstance(texts, (list, tuple)) and len(texts) == 0:
        return tf.constant([], tf.string)
    if not isinstance(texts, (tf.Tensor, tf.RaggedTensor)):
        try:
            texts = tf.convert_to_tensor(texts)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"{layer_name} takes text: a str, a list of str, or a tf.string tensor; could not "
                f"read a {type(texts).__name__} as text ({error})."
            ) from None
    if texts.dtype != tf.string:
        raise TypeError(
            f"{layer_name} takes text (str or tf.string), got values of dtype {texts.dtype.name}. "
            "Pass the raw strings; to turn token ids back into text use `BertTokenizer.detokenize`."
        )
    return texts
