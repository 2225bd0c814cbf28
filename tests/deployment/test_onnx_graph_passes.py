"""The ONNX graph rewrites on small hand-built graphs, run by ONNX Runtime."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from kerasbert.deployment.onnx_graph_passes import int8_embedding_rows  # noqa: E402


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
