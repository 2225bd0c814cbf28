"""Serves fresh interpreters to the reload tests (started by the `fresh_python` fixture in conftest.py).

It imports the modules named on its command line, runs nothing else, then forks one child per request: each
script runs in an interpreter whose only history is those imports, as in `python -c "import kerasbert; ..."`,
without paying the imports (about 6 s of CPU) again for every script.

Protocol, one JSON line each way: {"script", "cwd", "stdout", "stderr"} in (the two output paths are
files the child writes), {"returncode"} out.

Example:
    python tests/fresh_python_server.py kerasbert
"""

import atexit
import importlib
import json
import os
import sys
import traceback


def run_child(request):
    """In the forked child: run the script as `python -c` would, then leave without returning."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    os.chdir(request["cwd"])
    sys.argv = ["-c"]
    code = 0
    try:
        exec(compile(request["script"], "<string>", "exec"), {"__name__": "__main__"})
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve(requests, replies):
    for line in requests:
        replies.flush()
        pid = os.fork()
        if pid == 0:
            run_child(json.loads(line))
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        replies.flush()


if __name__ == "__main__":
    replies = os.fdopen(os.dup(1), "w")  # the protocol's channel; whatever else reaches fd 1 goes to stderr
    os.dup2(2, 1)
    for module in sys.argv[1:]:
        importlib.import_module(module)
    serve(sys.stdin, replies)
