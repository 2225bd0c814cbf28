"""Rewrites of the traced ONNX graph: masks for ONNX Runtime's CPU `Attention` kernel, the last layer for the first
token alone where only it is read, int8 embedding rows.

torch lowers `scaled_dot_product_attention` to ONNX `Attention`; its `[B, 1, 1, S]` padding mask is valid ONNX
(broadcast), but ONNX Runtime's CPU kernel wants the query axis: `masks_with_query_length` expands it to
`[B, 1, T, S]`. (Feeding the op `[B, T, hidden]` tensors in its 3-D form, four transposes fewer a layer, measured
level with this on MiniLM int8, so it is not done.) `first_token_only` computes what follows the last attention
(output projection, feed-forward, LayerNorms: each token on its own) for the first token alone when the graph reads
nothing else of that layer: a classifier's pooler and a `[CLS]`-pooled encoder read one row of 128.
`int8_embedding_rows` stores embedding tables as int8 with a
scale per row, the part of int8 export that ONNX Runtime's quantiser does with one scale per table. The `onnx`
package is imported when a pass runs.

Examples:
    >>> masks_with_query_length(model_proto)
    >>> first_token_only(model_proto)   # the number of first-token reads whose last layer was cut to one row
    1
    >>> int8_embedding_rows(model_proto)
"""

import collections

import numpy as np

from kerasbert.deployment.onnx_attention_fusion import CONTRIB_DOMAIN, Graph, attribute

# Ops that compute each token's row from that row alone (given per-feature constants): the part of a layer after its
# attention.
ROW_WISE = {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Erf", "Tanh", "Sigmoid", "Relu", "Gelu", "Cast",
            "LayerNormalization", "MatMul"}


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


def first_token_only(model_proto):
    """Where a `Gather` of index 0 on the sequence axis is all that reads the last layer, slice the last fused
    attention's output (and the residual beside it) to the first token, so the ops between run on one row; return
    how many such reads were cut. A read whose rows pass through anything but `ROW_WISE` ops back to a contrib
    `Attention` is left as it is."""
    cut = 0
    for read in [node.output[0] for node in model_proto.graph.node if reads_first_token(node)]:
        graph, nodes = Graph(model_proto.graph), list(model_proto.graph.node)
        gather_index = [index for index, node in enumerate(nodes) if read in node.output][0]
        first = graph.constant(nodes[gather_index].input[1])
        if first is None or first.size != 1 or int(first.reshape(-1)[0]) != 0:
            continue
        region, cuts = rows_read_by(graph, nodes, gather_index)
        if cuts and all(beside_attention(graph, name) for name in cuts):
            for name in cuts:
                slice_to_first_token(model_proto.graph, graph, nodes, region, name)
            cut += 1
    return cut


def reads_first_token(node):
    return node.op_type == "Gather" and node.domain in ("", "ai.onnx") and attribute(node, "axis", 0) == 1


def rows_read_by(graph, nodes, gather_index):
    """(indices of the nodes whose rows only the gather reads, the tensors those nodes take from outside)."""
    wanted, region, cuts = {nodes[gather_index].input[0]}, {gather_index}, []
    position = {id(node): index for index, node in enumerate(nodes)}
    outputs = {value.name for value in graph.graph.output}
    for index in range(gather_index - 1, -1, -1):
        node = nodes[index]
        made = [name for name in node.output if name in wanted]
        if not made:
            continue
        read_in_region = all(position.get(id(reader)) in region for name in node.output
                             for reader in graph.readers.get(name, []))
        if read_in_region and not outputs.intersection(node.output) and row_wise(graph, node):
            region.add(index)
            wanted.update(name for name in node.input if name and graph.constant(name) is None)
        else:
            cuts.extend(made)
    return region, cuts + [name for name in wanted if name not in graph.producer]


def row_wise(graph, node):
    """Whether `node` computes each row of its output from the same row of its inputs."""
    if node.op_type not in ROW_WISE or node.domain not in ("", "ai.onnx"):
        return False
    if node.op_type == "MatMul":
        weights = graph.constant(node.input[1])
        return graph.constant(node.input[0]) is None and weights is not None and weights.ndim == 2
    if node.op_type == "LayerNormalization" and attribute(node, "axis", -1) != -1:
        return False
    constants = [graph.constant(name) for name in node.input if name]
    return all(value is None or value.ndim <= 1 for value in constants)


def beside_attention(graph, name):
    """Whether `name` is a contrib `Attention`'s output or its input (the residual beside it): `[B, S, hidden]`."""
    producer = graph.producer.get(name)
    if producer is not None and producer.op_type == "Attention" and producer.domain == CONTRIB_DOMAIN:
        return True
    return any(reader.op_type == "Attention" and reader.domain == CONTRIB_DOMAIN and reader.input[0] == name
               for reader in graph.readers.get(name, []))


def slice_to_first_token(graph_proto, graph, nodes, region, name):
    """Feed the `region` nodes that read `name` its first token (`Slice` of axis 1) instead."""
    import onnx
    from onnx import numpy_helper

    first = f"{name}_first_token"
    for index in region:
        for position, value in enumerate(nodes[index].input):
            if value == name:
                nodes[index].input[position] = first
    bounds = [f"{first}_{part}" for part in ("starts", "ends", "axes")]
    graph_proto.initializer.extend(numpy_helper.from_array(np.array([value], np.int64), bound)
                                   for bound, value in zip(bounds, (0, 1, 1)))
    made_inside = {output for index in region for output in nodes[index].output}
    for value in [value for value in graph_proto.value_info if value.name in made_inside]:
        graph_proto.value_info.remove(value)  # their sequence axis is now 1
    producer = graph.producer.get(name)
    at = list(graph_proto.node).index(producer) + 1 if producer is not None else 0
    graph_proto.node.insert(at, onnx.helper.make_node("Slice", [name, *bounds], [first], name=first))


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
