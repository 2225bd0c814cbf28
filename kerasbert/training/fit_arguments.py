"""Checks of `fit`'s and the task constructors' keyword arguments, before any computation: each bad value
is a TypeError or ValueError that names the argument and what it accepts.

Examples:
    >>> check_learning_rate(-1)
    Traceback (most recent call last):
    ValueError: learning_rate must be a positive number or a keras LearningRateSchedule, got -1.
"""

import numbers

import keras


def check_learning_rate(learning_rate):
    """None (the default by model size), a positive number or a keras `LearningRateSchedule`."""
    if learning_rate is None or isinstance(learning_rate, keras.optimizers.schedules.LearningRateSchedule):
        return
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, numbers.Real):
        raise TypeError("learning_rate must be a positive number or a keras LearningRateSchedule, got "
                        f"{type(learning_rate).__name__} {learning_rate!r}.")
    if not learning_rate > 0:
        raise ValueError("learning_rate must be a positive number or a keras LearningRateSchedule, got "
                         f"{learning_rate!r}.")


def check_seed(seed):
    """An int >= 0: the seed of the shuffles and of dropout."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int >= 0, got {type(seed).__name__} {seed!r}.")
    if seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}.")


def check_callbacks(callbacks):
    """None, or a list or tuple of `keras.callbacks.Callback`s."""
    if callbacks is None:
        return
    if not isinstance(callbacks, (list, tuple)):
        raise TypeError(f"callbacks must be a list of keras.callbacks.Callback, got {type(callbacks).__name__} "
                        f"{callbacks!r}; e.g. callbacks=[keras.callbacks.EarlyStopping()].")
    wrong = [callback for callback in callbacks if not isinstance(callback, keras.callbacks.Callback)]
    if wrong:
        raise TypeError(f"callbacks must be keras.callbacks.Callback objects; {wrong[0]!r} "
                        f"({type(wrong[0]).__name__}) is not.")


def check_rate(name, value):
    """A dropout-like rate: a number in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in [0, 1), got {type(value).__name__} {value!r}.")
    if not 0 <= value < 1:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}.")


def split_for_validation(frame, validation_split, validation_data):
    """Keras' `validation_split` for a DataFrame: the last `validation_split` of its rows (before any shuffle)
    become the validation data; returns `(training rows, validation rows)`, copies of `frame`'s parts.

    Examples:
        >>> train, validation = split_for_validation(df, 0.1, None)
    """
    if validation_data is not None:
        raise ValueError("Pass validation_data or validation_split, not both.")
    if isinstance(validation_split, bool) or not isinstance(validation_split, numbers.Real):
        raise TypeError(f"validation_split must be a fraction in (0, 1), got {type(validation_split).__name__} "
                        f"{validation_split!r}.")
    if not 0 < validation_split < 1:
        raise ValueError(f"validation_split must be a fraction in (0, 1), got {validation_split!r}.")
    if not hasattr(frame, "iloc"):
        raise TypeError("validation_split needs a DataFrame of training rows; pass validation_data instead.")
    split_at = int(len(frame) * (1 - validation_split))
    if split_at in (0, len(frame)):
        raise ValueError(f"validation_split={validation_split} of {len(frame)} rows leaves "
                         f"{'no training' if split_at == 0 else 'no validation'} rows; choose another fraction.")
    return frame.iloc[:split_at].copy(), frame.iloc[split_at:].copy()
