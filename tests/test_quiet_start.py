"""`import kerasbert` prints nothing: TensorFlow's C++ start-up lines are silenced unless the user set a level."""

import os
import subprocess
import sys


def run_python(code, **env):
    environment = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**environment, **env})


def test_import_and_first_prediction_print_nothing():
    code = ("import kerasbert as kb; t = kb.BertTokenizer.from_preset('all_minilm_l6_v2_en'); "
            "b = kb.BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=8, "
            "intermediate_dim=8, max_sequence_length=16); "
            "print(b(kb.BertPreprocessor(t, sequence_length=8)(['a text']))['pooled_output'].shape)")
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and result.stdout.strip() == "(1, 8)"

