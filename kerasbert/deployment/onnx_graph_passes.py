"""A rewrite of the traced ONNX graph for ONNX Runtime's CPU `Attention` kernel (opset 23).

torch lowers `scaled_dot_product_attention` to ONNX `Attention`; its `[B, 1, 1, S]` padding mask is valid ONNX
(broadcast), but ONNX Runtime's CPU kernel wants the query axis: `masks_with_query_length` expands it to
`[B, 1, T, S]`. (Feeding the op `[B, T, hidden]` tensors in its 3-D form, four transposes fewer a layer, measured
level with this on MiniLM int8, so it is not done.) The `onnx` package is imported when the pass runs.

Examples:
    >>> masks_with_query_length(model_proto)
"""


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
