"""Every family's backbone traced to ONNX (issue 33, section 4) and run by ONNX Runtime.

Reference: the same Keras backbones (loaded from the seeded HF folders of conftest.py, which match HF
transformers to 1e-4). Bar: max |difference| <= 1e-4 in float32 on every output of every family, on batch sizes
and lengths the trace never saw (it traced batch 2, length 5). The five backbones side by side in one functional
model make one trace (a trace costs about 5 s on 2 cores).
"""

import keras
import numpy as np
import pytest

from kerasbert.deployment.onnx_export import onnx_graph

from .test_family_backbones import FAMILIES, numpy_outputs, padded_batch

onnxruntime = pytest.importorskip("onnxruntime", reason="pip install 'kerasbert[onnx]'")

TOLERANCE = 1e-4
NAMES = ["bert", "albert_grouped", "roberta", "distilbert", "electra"]


def side_by_side(backbones):
    """One functional model: input `<family>__<input>`, output `<family>__<output>` for each backbone."""
    inputs = {f"{name}__{key}": keras.Input(shape=(None,), dtype="int32", name=f"{name}__{key}")
              for name, backbone in backbones.items() for key in backbone.input}
    outputs = {f"{name}__{key}": value for name, backbone in backbones.items()
               for key, value in backbone({key: inputs[f"{name}__{key}"] for key in backbone.input}).items()}
    return keras.Model(inputs, outputs)


@pytest.mark.under_torch
def test_onnx_graph_of_every_family_gives_the_keras_outputs(hf_family_model, tmp_path):
    backbones = {name: FAMILIES[name][0].from_preset(str(hf_family_model(name)[0])) for name in NAMES}
    onnx_graph(side_by_side(backbones), tmp_path / "families.onnx")
    session = onnxruntime.InferenceSession(str(tmp_path / "families.onnx"), providers=["CPUExecutionProvider"])
    for length in (9, 17):  # batch 3 (the trace: 2), lengths other than the trace's 5
        feeds, differences = {}, {}
        for name, backbone in backbones.items():
            _, padding_token_id, num_segments, _ = FAMILIES[name]
            inputs = padded_batch(padding_token_id, num_segments, length=length)
            feeds.update({f"{name}__{key}": inputs[key] for key in backbone.input})
            expected = numpy_outputs(backbone, inputs)
            differences.update({f"{name}__{key}": expected[key] for key in expected})
        names = [output.name for output in session.get_outputs()]
        got = dict(zip(names, session.run(None, feeds)))
        assert sorted(names) == sorted(differences)
        differences = {key: float(np.abs(got[key] - expected).max()) for key, expected in differences.items()}
        print(f"length {length}: ONNX Runtime vs Keras {differences}")
        assert max(differences.values()) <= TOLERANCE
