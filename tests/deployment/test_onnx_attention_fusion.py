"""ONNX Runtime's contrib `Attention` in place of the traced self-attention (issue 33, section 1).

Reference: the same graph unfused, run by ONNX Runtime, and the Keras backbone. Bars: outputs within 1e-5 of the
unfused graph (float32) on padded rows of lengths the trace never saw; one fused attention a layer; an attention
whose mask is not the padding mask alone is left as traced.
"""

import keras
import numpy as np
import pytest

from kerasbert.deployment.onnx_attention_fusion import CONTRIB_DOMAIN, fuse_self_attention
from kerasbert.deployment.onnx_export import traced_graph
from kerasbert.deployment.onnx_graph_passes import masks_with_query_length
from kerasbert.families.bert.bert_backbone import BertBackbone

onnx = pytest.importorskip("onnx", reason="pip install 'kerasbert[onnx]'")
onnxruntime = pytest.importorskip("onnxruntime", reason="pip install 'kerasbert[onnx]'")
pytestmark = pytest.mark.under_torch


@pytest.fixture(scope="module")
def backbone_graph():
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=4, hidden_dim=32, intermediate_dim=64)
    return backbone, traced_graph(backbone)


def copy(graph):
    duplicate = onnx.ModelProto()
    duplicate.CopyFrom(graph)
    return duplicate


def run(graph, inputs):
    session = onnxruntime.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {model_input.name: inputs[model_input.name] for model_input in session.get_inputs()})


def attentions(graph, domain):
    return [node for node in graph.graph.node if node.op_type == "Attention" and node.domain == domain]


def padded_inputs(length):
    padding_mask = (np.arange(length)[None, :] < np.array([[length], [length - 3], [1]])).astype("int32")
    token_ids = np.random.default_rng(length).integers(1, 100, size=padding_mask.shape).astype("int32")
    return {"token_ids": token_ids * padding_mask, "segment_ids": np.zeros_like(padding_mask),
            "padding_mask": padding_mask}


def test_each_layer_attention_becomes_one_contrib_attention_with_the_same_outputs(backbone_graph):
    backbone, traced = backbone_graph
    unfused, fused = copy(traced), copy(traced)
    masks_with_query_length(unfused)
    assert fuse_self_attention(fused) == 2
    assert len(attentions(fused, CONTRIB_DOMAIN)) == 2 and not attentions(fused, "")
    assert [node.op_type for node in fused.graph.node].count("Split") == 0  # the QKV split went with the pattern
    onnx.checker.check_model(fused)
    for length in (7, 19):  # the trace saw 5
        inputs = padded_inputs(length)
        expected, got = run(unfused, inputs), run(fused, inputs)
        keras_sequence = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
        for expected_output, got_output in zip(expected, got):
            assert np.abs(got_output - expected_output).max() <= 1e-5
        real = inputs["padding_mask"].astype(bool)
        sequence = got[[output.name for output in fused.graph.output].index("sequence_output")]
        assert np.abs(sequence[real] - keras_sequence[real]).max() <= 1e-4


def test_an_attention_whose_mask_is_not_the_padding_mask_stays_as_traced(backbone_graph):
    graph = copy(backbone_graph[1])
    masked_value = next(node for node in graph.graph.node if node.op_type == "Where"
                        and any(reader.op_type == "Attention" for reader in graph.graph.node
                                if node.output[0] in reader.input))
    masked_value.input[2] = masked_value.input[1]  # padding keys now weigh as much as real ones: not a padding mask
    assert fuse_self_attention(graph) == 0
    assert len(attentions(graph, "")) == 2 and not attentions(graph, CONTRIB_DOMAIN)


def test_multiple_choice_reshaped_mask_is_fused_with_the_keras_scores(tmp_path):
    from kerasbert.deployment.onnx_export import onnx_graph
    from kerasbert.families.bert_preprocessor import BertPreprocessor
    from kerasbert.tasks import BertMultipleChoice

    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=100, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32)
    preprocessor = BertPreprocessor.from_preset("all_minilm_l6_v2_en", sequence_length=32)
    chooser = BertMultipleChoice(backbone, preprocessor, num_choices=3)
    graph = onnx.load(str(onnx_graph(chooser, tmp_path / "chooser.onnx")))  # the mask: [B, 3, S] -> [B x 3, S]
    assert len(attentions(graph, CONTRIB_DOMAIN)) == 1 and not attentions(graph, "")
    flat = padded_inputs(11)
    inputs = {key: np.stack([value, value[::-1], value[[1, 0, 2]]], axis=1)[:2] for key, value in flat.items()}
    expected = keras.ops.convert_to_numpy(chooser(inputs))
    np.testing.assert_allclose(run(graph, inputs)[0], expected, atol=1e-5)


def test_dead_node_removal_keeps_what_a_subgraph_reads():
    from onnx import TensorProto, helper

    from kerasbert.deployment.onnx_attention_fusion import remove_dead_nodes

    value = helper.make_tensor_value_info
    branch = helper.make_graph([helper.make_node("Identity", ["doubled"], ["picked"])], "branch", [],
                               [value("picked", TensorProto.FLOAT, [2])])
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["doubled"]),  # read only inside the If's branches
         helper.make_node("Neg", ["x"], ["unused"]),  # read by nothing
         helper.make_node("If", ["flag"], ["y"], then_branch=branch, else_branch=branch)],
        "outer", [value("x", TensorProto.FLOAT, [2]), value("flag", TensorProto.BOOL, [])],
        [value("y", TensorProto.FLOAT, [2])])
    remove_dead_nodes(graph)
    assert [node.op_type for node in graph.node] == ["Add", "If"]
