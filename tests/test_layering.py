"""The package's imports run one way: each subpackage imports only the levels below it (README, Layout)."""

import ast
import importlib
import pathlib

import kerasbert

PACKAGE = pathlib.Path(kerasbert.__file__).parent
# Lower numbers first; a module may import its own subpackage and any of a lower level.
LEVELS = {
    "presets": 0,  # checkpoint files and the registry: no model class
    "training": 0,  # optimizers, schedules, device checks, fit arguments
    "metrics": 0,  # numbers from arrays
    "layers": 1,
    "tokenizers": 1,  # shared machinery; from_preset reads presets
    "retrieval": 1,  # indexes of vectors, runs and their scores; an encoder is an argument
    "families": 2,  # backbones and tokenizers per family
    "data": 2,  # takes a tokenizer as an argument, never imports a model
    "deployment": 3,  # model functions traced once, export, int8
    "fine_tuning": 4,  # modes, frozen features, task-weight files
    "generation": 4,  # decoding loops over a model function
    "tasks": 5,
    "distillation": 6,  # a student task model learns from a teacher task model
    "serving": 7,  # the HTTP app around a task model
    "plots": 7,  # pictures and reports of a task model's run
    "cli": 8,  # the `kerasbert` command: reaches everything
}
# Modules of the package root below every level (they import nothing of kerasbert but each other, and no
# TensorFlow: the command line checks files and columns with them first), and the version.
ROOT_MODULES = {"_quiet_start", "arguments", "atomic_files", "dataset_folder", "doors", "json_records", "progress", "saved_files",
                "__version__"}
# Subpackages that import inside functions on purpose: the command imports TensorFlow only in the
# commands that need it, so that `kerasbert --help` answers at once.
LAZY_SUBPACKAGES = {"cli"}


def kerasbert_imports(path):
    """(imported module, line, at module level?) for each `kerasbert...` import of a file."""
    tree = ast.parse(path.read_text())
    top_level = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "kerasbert":
            names = [node.module] if node.module != "kerasbert" else [f"kerasbert.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if alias.name.split(".")[0] == "kerasbert"]
        else:
            continue
        for name in names:
            yield name, node.lineno, id(node) in top_level


def test_every_subpackage_has_a_level():
    subpackages = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    assert subpackages == set(LEVELS)


def test_no_import_runs_upward_or_hides_in_a_function():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if len(relative.parts) == 1:
            continue  # the package root re-exports everything
        own = relative.parts[0]
        for name, line, at_module_level in kerasbert_imports(path):
            parts = name.split(".")
            target = parts[1] if len(parts) > 1 else None
            where = f"kerasbert/{relative}:{line} imports {name}"
            if target in ROOT_MODULES:
                continue
            if target not in LEVELS:
                wrong.append(f"{where} (the package root: import the module itself)")
            elif target != own and LEVELS[target] >= LEVELS[own]:
                wrong.append(f"{where} ({own} is level {LEVELS[own]}, {target} level {LEVELS[target]})")
            elif not at_module_level and own not in LAZY_SUBPACKAGES:
                wrong.append(f"{where} inside a function (a hidden cycle: import at the top)")
    assert not wrong, "\n".join(wrong)


def test_root_modules_import_only_each_other():
    for name in ROOT_MODULES - {"__version__"}:
        imported = {module.split(".")[1] for module, _, _ in kerasbert_imports(PACKAGE / f"{name}.py")}
        assert imported <= ROOT_MODULES, (name, imported - ROOT_MODULES)


def task_model_modules():
    """The modules of kerasbert/tasks/ that define a task model (a Task subclass), by name."""
    from kerasbert.tasks.task import Task

    modules = {}
    for path in sorted((PACKAGE / "tasks").glob("*.py")):
        module = importlib.import_module(f"kerasbert.tasks.{path.stem}")
        if any(isinstance(value, type) and issubclass(value, Task) and value is not Task
               and value.__module__ == module.__name__ for value in vars(module).values()):
            modules[module.__name__] = path
    return modules


def test_a_task_model_file_imports_another_only_to_subclass_or_compose_it():
    from kerasbert.tasks.task import Task

    modules = task_model_modules()
    assert len(modules) >= 10  # the check reads the real task files
    wrong = []
    for name, path in modules.items():
        for imported, line, _ in kerasbert_imports(path):
            if imported in modules and imported != name:
                node = next(node for node in ast.walk(ast.parse(path.read_text()))
                            if isinstance(node, ast.ImportFrom) and node.lineno == line)
                source = importlib.import_module(imported)
                helpers = [alias.name for alias in node.names
                           if not (isinstance(getattr(source, alias.name), type)
                                   and issubclass(getattr(source, alias.name), Task))]
                if helpers:
                    wrong.append(f"{path.name}:{line} imports {helpers} from {imported} (shared helpers belong in a "
                                 "module of their own: kerasbert/tasks/heads.py, masked_lm_common.py, ...)")
    assert not wrong, "\n".join(wrong)
