"""The options an earlier kerasbert took as separate arguments: reading them from saved configs, and naming today's
spelling when a caller passes them.

Examples:
    >>> upgraded_task_config({"text_column": "review", "doc_stride": 64}, {"text": "text"}, True)
    {'long_inputs': {'doc_stride': 64}, 'columns': {'text': 'review'}}
"""

from kerasbert.doors import argument_hint
from kerasbert.fine_tuning.modes import fine_tuning_from_legacy
from kerasbert.tasks.columns import columns_from_legacy
from kerasbert.tasks.long_inputs import long_inputs_from_legacy


def upgraded_task_config(config, default_columns, has_long_inputs):
    """A task config with `layer_mix` in `fine_tuning`, `doc_stride`/`window_pooling` in `long_inputs` (when the
    task has them) and the `<role>_column` keys in `columns`."""
    config = fine_tuning_from_legacy(config)
    if has_long_inputs:
        config = long_inputs_from_legacy(config)
    return columns_from_legacy(config, default_columns)


def check_no_earlier_options(task_class, arguments):
    """A TypeError for arguments an earlier kerasbert took apart (`text_column=`, `doc_stride=`, ...), with today's."""
    earlier = sorted(set(arguments) - set(task_class.upgrade_config(dict(arguments))))
    if earlier:
        today = task_class.upgrade_config({name: arguments[name] for name in earlier})
        raise TypeError(f"{', '.join(earlier)}: now pass {', '.join(argument_hint(k, v) for k, v in today.items())}.")
