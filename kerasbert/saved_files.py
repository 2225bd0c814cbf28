"""A saved task model's file, read without TensorFlow: is it a complete `.keras` file, which task, which columns.

The command line checks the model file and the data's columns with these before it imports TensorFlow and loads
the weights (seconds), so that a wrong path or column is reported at once.

Examples:
    >>> saved = saved_task("sentiment.keras")
    >>> saved.class_name, saved.columns
    ('BertClassifier', {'text': 'review', 'text_pair': 'text_pair', 'label': 'label'})
    >>> saved.check_columns(["review", "stars"], with_labels=False)
"""

import dataclasses
import json
import zipfile
from pathlib import Path

from kerasbert.doors import column_hint

# The roles a task's predict reads (any one role of each tuple), and those evaluate reads as well.
INPUT_ROLES = {
    "BertClassifier": [("text",)], "BertTextEncoder": [("text",)], "BertMaskedLM": [("text",)],
    "BertTokenClassifier": [("tokens", "text")], "BertQuestionAnswerer": [("question",), ("context",)],
    "BertMultipleChoice": [("context",), ("endings",)], "BertSeq2Seq": [("source",)],
}
LABEL_ROLES = {"BertClassifier": [("label",)], "BertTokenClassifier": [("tags",)],
               "BertQuestionAnswerer": [("answer_texts",)], "BertMultipleChoice": [("label",)],
               "BertSeq2Seq": [("target",)]}


@dataclasses.dataclass(frozen=True)
class SavedTask:
    """What a `.keras` file says about its task model: `class_name` and `columns` ({role: column})."""

    class_name: str
    columns: dict

    def with_columns(self, columns):
        """This task reading `columns` ({role: name}, e.g. from `--column`) over its saved ones."""
        return dataclasses.replace(self, columns={**self.columns, **(columns or {})})

    def check_columns(self, data_columns, with_labels):
        """Raise a ValueError naming the first role whose column the data lacks (and the fix, in the current
        door's syntax); tasks without known roles pass (the model checks its data when it runs)."""
        known = INPUT_ROLES.get(self.class_name, []) + LABEL_ROLES.get(self.class_name, [])
        groups = INPUT_ROLES.get(self.class_name, []) + (LABEL_ROLES.get(self.class_name, []) if with_labels else [])
        read = {self.columns.get(role, role) for roles in known for role in roles} | set(self.columns.values())
        present = set(map(str, data_columns))
        for roles in groups:
            names = [self.columns.get(role, role) for role in roles]
            if present.isdisjoint(names):
                free = sorted(present - read)
                wanted = " or ".join(f"{name!r} ({role})" for role, name in zip(roles, names))
                fix = f"Name yours, e.g. {column_hint(roles[0], free[0])}." if free else \
                    f"Add the {roles[0]} as a {names[0]!r} column."
                raise ValueError(f"The data has no column {wanted}, which this {self.class_name} reads; its "
                                 f"columns are {sorted(present)}. {fix}")


def saved_task(path):
    """The `SavedTask` of the `.keras` file (or ONNX folder) at `path`, or a FileNotFoundError/ValueError saying
    what is wrong with the file (missing, not .keras, truncated) and what to do."""
    config = onnx_folder_task_config(path) or keras_file_config(path)
    settings = config.get("config") if isinstance(config, dict) and isinstance(config.get("config"), dict) else {}
    columns = {key[:-len("_column")]: name for key, name in settings.items() if key.endswith("_column")}  # before 0.1
    columns.update(settings.get("columns") if isinstance(settings.get("columns"), dict) else {})
    return SavedTask(str(config.get("class_name", "")) if isinstance(config, dict) else "", columns)


def keras_file_config(path):
    """The `config.json` of the `.keras` file at `path`, or the error naming what is wrong with the file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (resolved from {Path.cwd()}). Give the .keras file that "
                                f"`save` or `kerasbert fit --output` wrote.")
    if path.suffix != ".keras":
        raise ValueError(f"{path} is not a .keras file. Give a model saved with `save('name.keras')`.")
    try:
        with zipfile.ZipFile(path) as archive:
            return json.loads(archive.read("config.json"))
    except (zipfile.BadZipFile, KeyError, EOFError, OSError, json.JSONDecodeError):
        raise ValueError(f"{path} is not a complete .keras file (a .keras file is a zip archive with the model's "
                         f"config.json; this one is truncated or corrupt). Save the model again.") from None


def onnx_folder_task_config(path):
    """The task config in an ONNX folder's kerasbert.json (`export(format="onnx")`); None for anything else.
    (The name is `onnx_export.CONFIG_FILE`, spelled here because this module is read without TensorFlow.)"""
    try:
        with open(Path(path) / "kerasbert.json", encoding="utf-8") as file:
            return json.load(file).get("task")
    except (OSError, ValueError, AttributeError):
        return None
