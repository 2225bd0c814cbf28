"""The shape of the code, as the layout work measures it: the Task base, the classifier, the task room, imports
between task model files, helper lines in them, long signatures, README length.

Run on any checkout (an old one too: give the folder of its task models):
    .venv/bin/python benchmarks/code_shape.py . kerasbert/tasks
    git worktree add /tmp/old 353196b && .venv/bin/python benchmarks/code_shape.py /tmp/old kerasbert/applications
Pairs of repeated code: `duplicates` (the tool library's) on kerasbert/ and applications/.
"""
import ast
import pathlib
import sys

root = pathlib.Path(sys.argv[1]); task_dir = root / sys.argv[2]
pkg = root / "kerasbert"

def tree(p): return ast.parse(p.read_text())

def task_base():
    p = next(task_dir.glob("task.py"))
    t = tree(p)
    cls = next(n for n in t.body if isinstance(n, ast.ClassDef) and n.name == "Task")
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
    public = [m for m in methods if not m.name.startswith("_")]
    return {"task.py lines": len(p.read_text().splitlines()), "Task class lines": cls.end_lineno - cls.lineno + 1,
            "Task methods": len(methods), "Task public methods": len(public)}

def task_model_files():
    out = {}
    for p in sorted(task_dir.glob("*.py")):
        t = tree(p)
        classes = [n for n in t.body if isinstance(n, ast.ClassDef)
                   and any(getattr(b, "id", None) in ("Task", "BertPretrainer", "BertClassifier") for b in n.bases)]
        if classes and p.stem != "task":
            out[p.stem] = (p, t, classes)
    return out

def main():
    files = task_model_files()
    res = task_base()
    clf = files["bert_classifier"]
    res["bert_classifier.py lines"] = len(clf[0].read_text().splitlines())
    res["BertClassifier methods"] = sum(isinstance(n, ast.FunctionDef) for n in clf[2][0].body)
    res["task-room files"] = len(list(task_dir.glob("*.py")))
    res["task-room lines"] = sum(len(p.read_text().splitlines()) for p in task_dir.glob("*.py"))
    modname = ".".join(task_dir.relative_to(root).parts)
    edges, helper_edges = 0, 0
    for stem, (p, t, classes) in files.items():
        for n in ast.walk(t):
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith(modname + "."):
                other = n.module.rsplit(".", 1)[1]
                if other in files and other != stem:
                    edges += 1
                    other_classes = {c.name for c in files[other][2]}
                    if any(a.name not in other_classes for a in n.names):
                        helper_edges += 1
    res["task-file -> task-file import edges"] = edges
    res["  of them for helpers (not to subclass/compose)"] = helper_edges
    helper_lines = 0
    for stem, (p, t, classes) in files.items():
        for n in t.body:
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n not in classes:
                helper_lines += n.end_lineno - n.lineno + 1
    res["module-level helper lines in task model files"] = helper_lines
    big = []
    for p in sorted(pkg.rglob("*.py")):
        for n in ast.walk(tree(p)):
            if isinstance(n, ast.FunctionDef):
                a = n.args
                k = len(a.args) + len(a.kwonlyargs) + len(a.posonlyargs) - (1 if a.args and a.args[0].arg in ("self", "cls") else 0)
                if k > 10 and not (p.name == "bert_backbone.py" and n.name == "__init__"):
                    big.append(f"{p.relative_to(pkg)}:{n.name} {k}")
    res["signatures over 10 parameters (BertBackbone aside)"] = len(big)
    res["README lines"] = len((root / "README.md").read_text().splitlines())
    for k, v in res.items():
        print(f"{k}: {v}")
    print("  big signatures:", "; ".join(big))

main()
