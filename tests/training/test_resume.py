"""fit(..., backup_dir=...): a fine-tune killed with SIGKILL mid-epoch and started again with the same
command ends with the weights of an uninterrupted run (the tiny preset has dropout on, so the restored
seed-generator states matter as much as the weights and AdamW's moments)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).with_name("resumable_fit_script.py")


def run(*arguments):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, arguments)], capture_output=True, text=True,
                          env={**os.environ, "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "tensorflow")})


def test_killed_mid_epoch_and_run_again_ends_with_the_uninterrupted_weights(tiny_preset, tmp_path):
    backup = tmp_path / "backup"
    killed = run(tiny_preset, backup, tmp_path / "never.npz", "1:2")  # epoch 2 of 3, batch 3 of 5
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert [p.name for p in backup.iterdir()] == ["epoch-0001"]  # the state after epoch 1, complete
    resumed = run(tiny_preset, backup, tmp_path / "resumed.npz")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert not backup.exists()  # removed once fit completed
    straight = run(tiny_preset, tmp_path / "backup_straight", tmp_path / "straight.npz")
    assert straight.returncode == 0, straight.stderr[-2000:]

    resumed, straight = np.load(tmp_path / "resumed.npz"), np.load(tmp_path / "straight.npz")
    assert int(resumed["iterations"]) == int(straight["iterations"]) == 15
    for name in straight.files:
        np.testing.assert_allclose(resumed[name], straight[name], rtol=1e-5, atol=1e-6, err_msg=name)
