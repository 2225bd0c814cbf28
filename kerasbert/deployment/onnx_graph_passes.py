"""Rewrites of the traced ONNX graph: masks for ONNX Runtime's CPU `Attention` kernel, int8 embedding rows.

torch lowers `scaled_dot_product_attention` to ONNX `Attention`; its `[B, 1, 1, S]` padding mask is valid ONNX
(broadcast), but ONNX Runtime's CPU kernel wants the query axis: `masks_with_query_length` expands it to
`[B, 1, T, S]`. (Feeding the op `[B, T, hidden]` tensors in its 3-D form, four transposes fewer a layer, measured
level with this on MiniLM int8, so it is not done.) `int8_embedding_rows` stores embedding tables as int8 with a
scale per row, the part of int8 export that ONNX Runtime's quantiser does with one scale per table. The `onnx`
package is imported when a pass runs.

Examples:
    >>> masks_with_query_length(model_proto)
    >>> int8_embedding_rows(model_proto)
"""

import collections


def masks_with_query_length(model_proto):
    """Broadcast each `Attention` mask to `[B, 1, T, S]` (T and S from the query and key, 3-D or 4-D)."""
    import onnx

    graph = model_proto.graph
    for node in attention_nodes(graph):
        if len(node.input) < 4 or not node.input[3]:
            continue
        query, key, mask = node.input[0], node.input[1], node.input[3]
        sequence_axis = 1 if any(attribute.name == "q_num_heads" for attribute in node.attribute) else 2  # 3-D, 4-D
        name = f"{node.name}_mask"
        added = [
            onnx.helper.make_node("Shape", [mask], [f"{name}_batch"], start=0, end=2),
            onnx.helper.make_node("Shape", [query], [f"{name}_queries"], start=sequence_axis, end=sequence_axis + 1),
            onnx.helper.make_node("Shape", [key], [f"{name}_keys"], start=sequence_axis, end=sequence_axis + 1),
            onnx.helper.make_node("Concat", [f"{name}_batch", f"{name}_queries", f"{name}_keys"], [f"{name}_shape"],
                                  axis=0),
            onnx.helper.make_node("Expand", [mask, f"{name}_shape"], [f"{name}_full"]),
        ]
        node.input[3] = f"{name}_full"
        index = list(graph.node).index(node)
        for offset, new_node in enumerate(added):
            graph.node.insert(index + offset, new_node)


def attention_nodes(graph):
    return [node for node in graph.node if node.op_type == "Attention" and node.domain in ("", "ai.onnx")]


def int8_embedding_rows(model_proto):
    """Store each embedding table (a 2-D float32 initializer that one `Gather` alone reads) as int8 with a float32
    scale per row (its largest magnitude / 127), dequantised after the lookup: a quarter of the bytes, each row in
    its own range. (ONNX Runtime's `Gather` quantisation takes one scale for the whole table: CoNLL-2003 F1 0.6
    point under float32 on MiniLM, where rows kept at float32 or per-row int8 lose nothing.)"""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    graph = model_proto.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    readers = collections.Counter(name for node in graph.node for name in node.input)
    for node in list(graph.node):
        table = initializers.get(node.input[0]) if node.op_type == "Gather" else None
        on_rows = all(attribute.name != "axis" or attribute.i == 0 for attribute in node.attribute)
        if (table is None or readers[table.name] != 1 or len(table.dims) != 2
                or table.data_type != onnx.TensorProto.FLOAT or not on_rows):
            continue
        weights = numpy_helper.to_array(table)
        scale = np.abs(weights).max(axis=1, keepdims=True) / 127
        scale[scale == 0] = 1
        values = np.clip(np.round(weights / scale), -127, 127).astype(np.int8)
        name, ids, output = table.name, node.input[1], node.output[0]
        graph.initializer.remove(table)
        graph.initializer.extend([numpy_helper.from_array(values, f"{name}_int8"),
                                  numpy_helper.from_array(scale.astype(np.float32), f"{name}_scale")])
        rows = [
            onnx.helper.make_node("Gather", [f"{name}_int8", ids], [f"{output}_int8"], name=f"{node.name}_int8"),
            onnx.helper.make_node("Gather", [f"{name}_scale", ids], [f"{output}_scale"], name=f"{node.name}_scale"),
            onnx.helper.make_node("Cast", [f"{output}_int8"], [f"{output}_values"], to=onnx.TensorProto.FLOAT),
            onnx.helper.make_node("Mul", [f"{output}_values", f"{output}_scale"], [output]),
        ]
        index = list(graph.node).index(node)
        graph.node.remove(node)
        for offset, new_node in enumerate(rows):
            graph.node.insert(index + offset, new_node)
