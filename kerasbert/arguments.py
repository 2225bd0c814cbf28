"""The argument checks every constructor and call uses: one type rule and one value rule.

A value of the wrong type (a bool where a count or a number is asked for included) is a TypeError; a value of
the right type out of its range is a ValueError. Both name the argument, what it accepts and what it got.

Examples:
    >>> check_count("batch_size", 0)
    Traceback (most recent call last):
    ValueError: batch_size must be an int of at least 1, got 0.
    >>> check_number("dropout", 0.1, 0, 1, high_open=True)
    0.1
"""

import math
import numbers


def check_count(name, value, minimum=1, maximum=None, hint=""):
    """`value` as an int in `[minimum, maximum]` (no upper bound when `maximum` is None); `hint` ends the message."""
    wanted = f"an int of at least {minimum}" if maximum is None else f"an int from {minimum} to {maximum}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be {wanted}, got {type(value).__name__} {value!r}.{hint}")
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be {wanted}, got {value!r}.{hint}")
    return int(value)


def check_number(name, value, low=None, high=None, low_open=False, high_open=False, hint=""):
    """`value` as a finite float in the interval from `low` to `high` (None: unbounded; `*_open`: excluded)."""
    interval = (f"{'(' if low_open or low is None else '['}{'-inf' if low is None else low}, "
                f"{'inf' if high is None else high}{')' if high_open or high is None else ']'}")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in {interval}, got {type(value).__name__} {value!r}.{hint}")
    below = low is not None and (value < low or (low_open and value == low))
    above = high is not None and (value > high or (high_open and value == high))
    if not math.isfinite(value) or below or above:
        raise ValueError(f"{name} must be a number in {interval}, got {value!r}.{hint}")
    return float(value)
