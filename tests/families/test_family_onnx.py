"""Every family's backbone traced to ONNX (issue 33, section 4) and run by ONNX Runtime.

Reference: the same Keras backbone (loaded from the seeded HF folders of conftest.py, which match HF
transformers to 1e-4). Bar: max |difference| <= 1e-4 in float32 on every output, on batch sizes and lengths the
trace never saw (it traced batch 2, length 5). Each family's classifier, whose head reads the first token alone,
is exported with its last layer cut to that token and gives the Keras logits within 1e-5.
"""

import numpy as np
import pytest

from kerasbert.deployment.onnx_export import onnx_graph, output_names

from .test_family_backbones import FAMILIES, numpy_outputs, padded_batch

onnx = pytest.importorskip("onnx", reason="pip install 'kerasbert[onnx]'")
onnxruntime = pytest.importorskip("onnxruntime", reason="pip install 'kerasbert[onnx]'")

TOLERANCE = 1e-4


@pytest.mark.under_torch
@pytest.mark.parametrize("name", ["bert", "albert_grouped", "roberta", "distilbert", "electra"])
def test_onnx_graph_of_every_family_gives_the_keras_outputs(name, hf_family_model, tmp_path):
    backbone_class, padding_token_id, num_segments, _ = FAMILIES[name]
    backbone = backbone_class.from_preset(str(hf_family_model(name)[0]))
    onnx_graph(backbone, tmp_path / "backbone.onnx")
    operators = [(node.op_type, node.domain) for node in onnx.load(str(tmp_path / "backbone.onnx")).graph.node]
    assert ("Attention", "com.microsoft") in operators and ("Attention", "") not in operators  # all fused
    session = onnxruntime.InferenceSession(str(tmp_path / "backbone.onnx"), providers=["CPUExecutionProvider"])
    assert [output.name for output in session.get_outputs()] == output_names(backbone)
    for length in (9, 17):  # batch 3 (the trace: 2), lengths other than the trace's 5
        inputs = padded_batch(padding_token_id, num_segments, length=length)
        expected = numpy_outputs(backbone, inputs)
        feeds = {model_input.name: inputs[model_input.name] for model_input in session.get_inputs()}
        got = dict(zip(output_names(backbone), session.run(None, feeds)))
        differences = {key: float(np.abs(got[key] - expected[key]).max()) for key in expected}
        print(f"{name} length {length}: ONNX Runtime vs Keras {differences}")
        assert max(differences.values()) <= TOLERANCE


@pytest.mark.under_torch
@pytest.mark.parametrize("name", ["roberta", "albert", "distilbert", "electra"])
def test_every_family_classifier_runs_its_last_layer_on_the_first_token(name, tmp_path):
    """The classifier's head reads the first token alone: the exported graph computes the last layer for it alone
    (two `Slice`s of `first_token_only`) and gives the Keras logits, also for a row of one real token."""
    import keras

    from kerasbert.tasks import BertClassifier

    backbone_class, padding_token_id, num_segments, _ = FAMILIES[name]
    keras.utils.set_random_seed(0)
    sizes = dict(vocabulary_size=100, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32)
    backbone = backbone_class(**sizes, **({"embedding_dim": 8} if name in ("albert", "electra") else {}))
    classifier = BertClassifier(backbone, None, num_classes=3)
    graph = onnx.load(str(onnx_graph(classifier, tmp_path / "classifier.onnx")))
    assert sum(node.name.endswith("_first_token") for node in graph.graph.node) == 2
    session = onnxruntime.InferenceSession(str(tmp_path / "classifier.onnx"), providers=["CPUExecutionProvider"])
    inputs = padded_batch(padding_token_id, num_segments, length=11)
    inputs["padding_mask"][2, 1:] = 0  # a row of one real token
    (got,) = session.run(None, {model_input.name: inputs[model_input.name] for model_input in session.get_inputs()})
    expected = keras.ops.convert_to_numpy(classifier({key: inputs[key] for key in classifier.input}, training=False))
    assert np.abs(got - expected).max() <= 1e-5
