"""Fuse each traced self-attention into ONNX Runtime's contrib `Attention` (QKV projection, heads and padding mask
in one kernel), which its dynamic quantisation turns into `QAttention`: the int8 QKV product feeds attention
without a float round trip (the peers' HF -> ONNX Runtime path gets this from ONNX Runtime's BERT optimizer, which
does not recognise torch's opset-23 graph).

The pattern, as torch traces kerasbert's `MultiHeadSelfAttention` (fused QKV kernel) with a padding mask:

    X -> MatMul(W [hidden, 3 x hidden]) -> Add(b) -> Split(3, last axis) -> Reshape [B, S, heads, size] x 3
      -> Transpose [B, heads, S, size] x 3 -> Attention(q, k, v, mask) -> Transpose -> Reshape [B, S, hidden]
    mask = Where(Unsqueeze(Cast(padding_mask, bool), [1, 2]), 0, -large) (possibly Expand-ed)

becomes `com.microsoft.Attention(X, W, b, padding_mask)` with `num_heads` and the scale. Any other attention
(relative positions, global tokens, another mask) is left as it is.

Examples:
    >>> fuse_self_attention(model_proto)   # the number of attentions fused
    6
"""

import numpy as np

CONTRIB_DOMAIN = "com.microsoft"


class Graph:
    """Lookups over a GraphProto: each tensor's producer and readers, constant values."""

    def __init__(self, graph):
        self.graph = graph
        self.producer = {output: node for node in graph.node for output in node.output}
        self.readers = {}
        for node in graph.node:
            for name in node.input:
                self.readers.setdefault(name, []).append(node)
        self.initializers = {tensor.name: tensor for tensor in graph.initializer}
        self.int32_inputs = {value.name for value in graph.input if value.type.tensor_type.elem_type == 6}

    def made_by(self, name, op_type):
        """The node of `op_type` that makes `name`, or None."""
        node = self.producer.get(name)
        return node if node is not None and node.op_type == op_type and node.domain in ("", "ai.onnx") else None

    def only_reader(self, name, op_type):
        readers = self.readers.get(name, [])
        return readers[0] if len(readers) == 1 and readers[0].op_type == op_type else None

    def constant(self, name):
        """The numpy value of an initializer or `Constant` output, else None."""
        from onnx import numpy_helper

        if name in self.initializers:
            return numpy_helper.to_array(self.initializers[name])
        node = self.made_by(name, "Constant")
        if node is None or not node.attribute or node.attribute[0].name != "value":
            return None
        return numpy_helper.to_array(node.attribute[0].t)


def attribute(node, name, default=None):
    import onnx

    for item in node.attribute:
        if item.name == name:
            return onnx.helper.get_attribute_value(item)
    return default


def fuse_self_attention(model_proto):
    """Replace every matching self-attention (module docstring) by contrib `Attention`; return how many."""
    import onnx

    graph = Graph(model_proto.graph)
    fused = 0
    traced = [node for node in model_proto.graph.node if node.op_type == "Attention" and node.domain in ("", "ai.onnx")]
    for node in traced:
        match = match_self_attention(graph, node)
        if match is None:
            continue
        x, weights, bias, mask, output_reshape, heads = match
        head_size = graph.constant(weights).shape[1] // 3 // heads
        contrib = onnx.helper.make_node("Attention", [x, weights, bias, mask], [output_reshape.output[0]],
                                        name=f"{node.name}_fused", domain=CONTRIB_DOMAIN, num_heads=heads,
                                        scale=float(attribute(node, "scale", 1 / np.sqrt(head_size))))
        model_proto.graph.node.insert(list(model_proto.graph.node).index(node), contrib)
        model_proto.graph.node.remove(output_reshape)  # the rest of the pattern is then read by nothing
        fused += 1
    if fused:
        remove_dead_nodes(model_proto.graph)
        if all(opset.domain != CONTRIB_DOMAIN for opset in model_proto.opset_import):
            model_proto.opset_import.append(onnx.helper.make_opsetid(CONTRIB_DOMAIN, 1))
    return fused


def match_self_attention(graph, node):
    """(X, W, b, padding mask input, output Reshape, heads) when `node` is the pattern, else None."""
    if len(node.input) < 4 or attribute(node, "is_causal", 0) or attribute(node, "softcap", 0.0) \
            or attribute(node, "qk_matmul_output_mode", 0) or attribute(node, "q_num_heads") is not None \
            or len(node.output) != 1:
        return None
    heads_per_input, splits = [], []
    for index in range(3):
        transpose = graph.made_by(node.input[index], "Transpose")
        reshape = transpose and list(attribute(transpose, "perm", [])) == [0, 2, 1, 3] \
            and graph.made_by(transpose.input[0], "Reshape")
        split = reshape and graph.producer.get(reshape.input[0])
        if not split or split.op_type != "Split" or list(split.output).index(reshape.input[0]) != index:
            return None
        heads_per_input.append(reshape_heads(graph, reshape))
        splits.append(split)
    split = splits[0]
    if any(other is not split for other in splits) or len(split.output) != 3 or len(split.input) > 1 \
            or attribute(split, "axis") not in (2, -1) or heads_per_input[0] is None or len(set(heads_per_input)) != 1:
        return None
    projection = projection_of(graph, split.input[0])
    mask = padding_mask_of(graph, node.input[3])
    output = attention_output(graph, node.output[0])
    if projection is None or mask is None or output is None:
        return None
    x, weights, bias = projection
    if graph.constant(weights).shape[1] % (3 * heads_per_input[0]):
        return None
    return x, weights, bias, mask, output, heads_per_input[0]


def reshape_heads(graph, reshape):
    """The heads of a `Reshape` to `[B, S, heads, size]` whose shape is a Concat of pieces (constant heads)."""
    concat = graph.made_by(reshape.input[1], "Concat")
    if concat is None or len(concat.input) != 4:
        return None
    heads = graph.constant(concat.input[2])
    return int(heads.reshape(-1)[0]) if heads is not None and heads.size == 1 else None


def projection_of(graph, name):
    """(X, W, b) when `name` = Add(MatMul(X, W), b) with W 2-D and b 1-D constants, else None."""
    add = graph.made_by(name, "Add")
    if add is None:
        return None
    for matmul_input, bias in (add.input, reversed(add.input)):
        matmul = graph.made_by(matmul_input, "MatMul")
        if matmul is None or len(graph.readers.get(matmul.output[0], [])) != 1:
            continue
        weights, bias_value = graph.constant(matmul.input[1]), graph.constant(bias)
        if weights is not None and weights.ndim == 2 and bias_value is not None and bias_value.ndim == 1 \
                and matmul.input[1] in graph.initializers and bias in graph.initializers:
            return matmul.input[0], matmul.input[1], bias
    return None


def padding_mask_of(graph, name):
    """The `[B, S]` int32 1/0 padding mask (a model input) when `name` is the additive mask made from it alone."""
    expand = graph.made_by(name, "Expand")
    where = graph.made_by(expand.input[0] if expand else name, "Where")
    if where is None:
        return None
    unsqueeze = graph.made_by(where.input[0], "Unsqueeze")
    kept, dropped = graph.constant(where.input[1]), graph.constant(where.input[2])
    axes = unsqueeze is not None and graph.constant(unsqueeze.input[1])
    cast = unsqueeze is not None and graph.made_by(unsqueeze.input[0], "Cast")
    if not cast or axes is None or list(axes.reshape(-1)) != [1, 2] or kept is None or dropped is None \
            or kept.size != 1 or dropped.size != 1 or float(kept) != 0 or float(dropped) > -1e4:
        return None
    mask = cast.input[0]  # an int32 model input, or one reshaped (multiple choice: [B, choices, S] -> [B x choices, S])
    reshape = graph.made_by(mask, "Reshape")
    return mask if (reshape.input[0] if reshape else mask) in graph.int32_inputs else None  # contrib wants int32


def attention_output(graph, name):
    """The Reshape to `[B, S, hidden]` after the attention output's Transpose, else None."""
    transpose = graph.only_reader(name, "Transpose")
    reshape = transpose and list(attribute(transpose, "perm", [])) == [0, 2, 1, 3] \
        and graph.only_reader(transpose.output[0], "Reshape")
    return reshape or None


def remove_dead_nodes(graph):
    """Drop nodes whose outputs nothing reads (repeatedly: in the graph, its outputs or any If/Loop body), and
    initializers nothing reads."""
    outputs = {value.name for value in graph.output}
    while True:
        read = names_read(graph) | outputs
        dead = [node for node in graph.node if not any(output in read for output in node.output)]
        if not dead:
            break
        for node in dead:
            graph.node.remove(node)
    read = names_read(graph)
    for tensor in [tensor for tensor in graph.initializer if tensor.name not in read]:
        graph.initializer.remove(tensor)


def names_read(graph):
    """Every tensor name a node of `graph` or of its subgraphs (If/Loop/Scan bodies) takes as input."""
    read = set()
    for node in graph.node:
        read.update(node.input)
        for item in node.attribute:
            for subgraph in [item.g] * item.HasField("g") + list(item.graphs):
                read |= names_read(subgraph)
    return read
