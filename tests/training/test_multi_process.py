"""Data-parallel training in two processes (JAX, `keras.distribution.initialize`, gloo collectives over
localhost): each process trains on its half of every global batch, and the losses and final weights equal one
process's on the same global batches (dropout off). About 3.5 minutes on 2 cores (95 s each): run by naming the file."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.on_request
SCRIPT = Path(__file__).with_name("multi_process_script.py")


def free_port():
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def run(task, preset, output, processes):
    """Start `processes` processes of the script and wait for them all; process 0 writes `output`."""
    port = free_port()
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    running = [subprocess.Popen([sys.executable, str(SCRIPT), task, str(preset), str(output), str(processes),
                                 str(index), str(port)], env=environment, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True) for index in range(processes)]
    for process in running:
        log, _ = process.communicate(timeout=600)
        assert process.returncode == 0, log[-3000:]
    return np.load(f"{output}.npz") if Path(f"{output}.npz").exists() else np.load(output), \
        json.loads(Path(f"{output}.json").read_text())


@pytest.mark.parametrize("task", ["classifier", "pretrainer"])
def test_two_processes_take_the_steps_of_one(task, tiny_preset, tmp_path):
    two, two_history = run(task, tiny_preset, tmp_path / "two", 2)
    one, one_history = run(task, tiny_preset, tmp_path / "one", 1)
    assert set(two_history) == set(one_history)
    for name, losses in one_history.items():
        np.testing.assert_allclose(two_history[name], losses, rtol=1e-5, err_msg=name)
    for index, name in enumerate(one.files):
        np.testing.assert_allclose(two[name], one[name], rtol=1e-5, atol=1e-6, err_msg=f"weight {index}")
