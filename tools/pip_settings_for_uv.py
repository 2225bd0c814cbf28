"""Print pip's package-source settings as `uv pip install` flags, so uv installs what pip would.

uv does not read pip's configuration (pip.conf files and PIP_* variables). This machine's pip may name local
wheel folders, extra indexes or a constraints file; `make install` passes them on to uv. Prints nothing where
pip has none of these settings.

Example:
    $ python tools/pip_settings_for_uv.py
    --find-links /opt/wheels --extra-index-url file:///opt/pypi/simple --constraint /etc/xdg/pip/constraints.txt
"""

import shlex
import subprocess
import sys

FLAGS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint"}


def uv_flags(pip_config_lines):
    """`pip config list` lines (`global.find-links='/opt/wheels'`, `:env:.constraint='c.txt'`) -> uv flags."""
    pairs = []  # (flag, value), each once: a setting may come from pip.conf and a PIP_* variable alike
    for line in pip_config_lines:
        key, _, value = line.partition("=")
        flag = FLAGS.get(key.rsplit(".", 1)[-1])
        for item in " ".join(shlex.split(value)).split() if flag else ():
            if (flag, item) not in pairs:
                pairs.append((flag, item))
    return [word for pair in pairs for word in pair]


if __name__ == "__main__":
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    print(shlex.join(uv_flags(listed.splitlines())))
