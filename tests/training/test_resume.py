"""fit(..., backup_dir=...): a fine-tune killed with SIGKILL mid-epoch and started again with the same
command ends with the weights of an uninterrupted run (the tiny preset has dropout on, so the restored
seed-generator states matter as much as the weights and AdamW's moments)."""

from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).with_name("resumable_fit_script.py")


def run(fresh_python, *arguments, returncode=0):
    """`python resumable_fit_script.py ARGUMENTS` in a fresh interpreter (forked from one that imported
    kerasbert only: each run is its own process, as a command run again is), asserting its exit code."""
    argv = [str(SCRIPT), *map(str, arguments)]
    return fresh_python(f"import runpy, sys\nsys.argv = {argv!r}\nrunpy.run_path({str(SCRIPT)!r}, run_name='__main__')",
                        returncode=returncode)


def test_killed_mid_epoch_and_run_again_ends_with_the_uninterrupted_weights(tiny_preset, tmp_path, fresh_python):
    backup = tmp_path / "backup"
    run(fresh_python, tiny_preset, backup, tmp_path / "never.npz", "1:2", returncode=-9)  # epoch 2 of 3, batch 3 of 5
    assert [p.name for p in backup.iterdir()] == ["epoch-0001"]  # the state after epoch 1, complete
    assert not (tmp_path / "never.npz").exists()
    run(fresh_python, tiny_preset, backup, tmp_path / "resumed.npz")
    assert not backup.exists()  # removed once fit completed
    run(fresh_python, tiny_preset, tmp_path / "backup_straight", tmp_path / "straight.npz")

    resumed, straight = np.load(tmp_path / "resumed.npz"), np.load(tmp_path / "straight.npz")
    assert int(resumed["iterations"]) == int(straight["iterations"]) == 15
    for name in straight.files:
        np.testing.assert_allclose(resumed[name], straight[name], rtol=1e-5, atol=1e-6, err_msg=name)
