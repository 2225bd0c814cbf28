"""The ONNX graph rewrites on small hand-built and traced graphs, run by ONNX Runtime.

Reference: the graph before the rewrite. Bars: int8 embedding rows within half their own step; a classifier whose
last layer is cut to the first token gives the same logits (1e-5, float32) on padded rows of lengths the trace
never saw; a graph that outputs every token is left as it is."""

import numpy as np
import pytest

from kerasbert.deployment.onnx_graph_passes import first_token_only, int8_embedding_rows, masks_with_query_length

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def lookup_graph(table, tied=False):
    """ids -> Gather(table) (and, `tied`, the same table read again by a MatMul, as a tied decoder does)."""
    nodes = [helper.make_node("Gather", ["table", "ids"], ["rows"], name="embedding")]
    outputs = [helper.make_tensor_value_info("rows", TensorProto.FLOAT, None)]
    if tied:
        nodes.append(helper.make_node("MatMul", ["rows", "table_t"], ["logits"]))
        nodes.insert(0, helper.make_node("Transpose", ["table"], ["table_t"]))
        outputs.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "lookup", [helper.make_tensor_value_info("ids", TensorProto.INT64, [None, None])],
                              outputs, initializer=[numpy_helper.from_array(table, "table")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def run(model, ids):
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"ids": ids})


def test_embedding_rows_are_int8_with_a_scale_per_row():
    rng = np.random.default_rng(0)
    table = (rng.normal(size=(50, 8)) * rng.uniform(0.01, 10, size=(50, 1))).astype(np.float32)  # rows of any range
    table[3] = 0  # a row of zeros keeps scale 1, not a division by zero
    model = lookup_graph(table)
    int8_embedding_rows(model)
    stored = {tensor.name: numpy_helper.to_array(tensor) for tensor in model.graph.initializer}
    assert stored["table_int8"].dtype == np.int8 and stored["table_scale"].shape == (50, 1)
    assert "table" not in stored
    ids = np.array([[0, 3, 49], [7, 7, 1]], np.int64)
    (rows,) = run(model, ids)
    scale = np.abs(table).max(axis=1, keepdims=True) / 127
    assert (np.abs(rows - table[ids]) <= scale[ids] / 2 + 1e-7).all()  # each row within half its own step
    np.testing.assert_array_equal(rows[0, 1], 0)


def test_a_table_read_twice_stays_float():
    table = np.random.default_rng(1).normal(size=(20, 4)).astype(np.float32)
    model = lookup_graph(table, tied=True)
    int8_embedding_rows(model)
    assert [tensor.name for tensor in model.graph.initializer] == ["table"]
    rows, logits = run(model, np.array([[2, 5]], np.int64))
    np.testing.assert_array_equal(rows, table[[[2, 5]]])
    np.testing.assert_allclose(logits, table[[[2, 5]]] @ table.T, rtol=1e-6)


@pytest.fixture(scope="module")
def classifier_graph():
    """A tiny classifier (pooler on the first token) traced and fused as export does, before `first_token_only`."""
    import keras

    from kerasbert.deployment.onnx_attention_fusion import fuse_self_attention
    from kerasbert.deployment.onnx_export import traced_graph
    from kerasbert.families.bert.bert_backbone import BertBackbone
    from kerasbert.families.bert_preprocessor import BertPreprocessor
    from kerasbert.tasks import BertClassifier

    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=4, hidden_dim=32, intermediate_dim=64)
    preprocessor = BertPreprocessor.from_preset("all_minilm_l6_v2_en", sequence_length=32)
    graph = traced_graph(BertClassifier(backbone, preprocessor, num_classes=3))
    fuse_self_attention(graph)
    masks_with_query_length(graph)
    return graph


def padded_rows(length):
    """Three rows of `length` tokens: full, 3 padding tokens, one real token."""
    padding_mask = (np.arange(length)[None, :] < np.array([[length], [length - 3], [1]])).astype("int32")
    token_ids = np.random.default_rng(length).integers(1, 100, size=padding_mask.shape).astype("int32")
    return {"token_ids": token_ids * padding_mask, "segment_ids": np.zeros_like(padding_mask),
            "padding_mask": padding_mask}


def run_inputs(model, inputs):
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {item.name: inputs[item.name] for item in session.get_inputs()})


@pytest.mark.under_torch
def test_a_classifier_last_layer_runs_on_the_first_token_with_the_same_logits(classifier_graph):
    cut = onnx.ModelProto()
    cut.CopyFrom(classifier_graph)
    assert first_token_only(cut) == 1
    onnx.checker.check_model(cut)
    slices = [node for node in cut.graph.node if node.op_type == "Slice"]
    assert len(slices) == 2  # the last attention's output and the residual beside it
    sliced = {node.output[0] for node in slices}
    readers = sorted(node.op_type for node in cut.graph.node if sliced.intersection(node.input))
    assert readers == ["Add", "MatMul"]  # the output projection and the residual add
    for length in (7, 19):  # the trace saw 5
        inputs = padded_rows(length)
        (expected,), (got,) = run_inputs(classifier_graph, inputs), run_inputs(cut, inputs)
        assert got.shape == expected.shape == (3, 3)
        assert np.abs(got - expected).max() <= 1e-5


@pytest.mark.under_torch
def test_a_graph_that_outputs_every_token_is_not_cut():
    from kerasbert.deployment.onnx_export import traced_graph
    from kerasbert.families.bert.bert_backbone import BertBackbone

    backbone = BertBackbone(vocabulary_size=100, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32)
    graph = traced_graph(backbone)  # its outputs: sequence_output (every token) and pooled_output (the first)
    before = [node.op_type for node in graph.graph.node]
    assert first_token_only(graph) == 0
    assert [node.op_type for node in graph.graph.node] == before
