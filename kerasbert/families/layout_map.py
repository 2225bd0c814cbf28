"""Model parallelism for `BertBackbone`: a `keras.distribution.LayoutMap` and its checks.

The layout is Megatron's for an encoder: the fused query/key/value and the intermediate kernels
are split by output columns over the mesh's model axis, the attention-output and output kernels by
input rows, so each block needs one all-reduce after attention and one after the feed-forward
(XLA inserts them). The token embedding is split by hidden columns: BERT vocabularies (30522 =
2 x 3 x 5087, 28996, 119547) do not divide over 4 or 8 devices, hidden sizes do. The other axis of
each kernel is split over the batch axis (ZeRO-3/FSDP style, as keras-hub's Gemma layout does); on
a mesh whose batch axis has one device that is plain tensor parallelism.

Examples:
    >>> mesh = keras.distribution.DeviceMesh((1, 2), ("batch", "model"), keras.distribution.list_devices())
    >>> layout_map = BertBackbone.get_layout_map(mesh)
    >>> with keras.distribution.ModelParallel(layout_map=layout_map, batch_dim_name="batch").scope():
    ...     backbone = BertBackbone.from_preset("bert_base_en_uncased")
"""

import keras

BLOCK = r"(.*/)?encoder_block_\d+"


def bert_layout_map(device_mesh, model_parallel_dim_name="model", data_parallel_dim_name="batch"):
    """The `LayoutMap` that shards a `BertBackbone`'s large kernels over `device_mesh` (see module)."""
    if not isinstance(device_mesh, keras.distribution.DeviceMesh):
        raise TypeError(f"device_mesh must be a keras.distribution.DeviceMesh, got {type(device_mesh).__name__}.")
    for name in (model_parallel_dim_name, data_parallel_dim_name):
        if name not in device_mesh.axis_names:
            raise ValueError(f"The device mesh has axes {list(device_mesh.axis_names)}, not {name!r}: "
                             "name the mesh's axes with model_parallel_dim_name / data_parallel_dim_name.")
    model, data = model_parallel_dim_name, data_parallel_dim_name
    layout_map = keras.distribution.LayoutMap(device_mesh)
    layout_map[r"(.*/)?token_embedding/embeddings"] = (None, model)
    layout_map[BLOCK + r"/attention/qkv_dense/kernel"] = (data, model)
    layout_map[BLOCK + r"/attention/output_dense/kernel"] = (model, data)
    layout_map[BLOCK + r"/intermediate_dense/kernel"] = (data, model)
    layout_map[BLOCK + r"/output_dense/kernel"] = (model, data)
    return layout_map


def backbone_weight_shapes(vocabulary_size, num_blocks, hidden_dim, intermediate_dim, max_sequence_length,
                           num_segments, normalize_first, embedding_dim=None, use_pooler=True):
    """`{weight path: shape}` of a `BertBackbone` with this config (`num_blocks` distinct encoder blocks),
    known before it is built.

    >>> shapes = backbone_weight_shapes(100, 1, 8, 16, 16, 2, False)
    >>> shapes["encoder_block_0/attention/qkv_dense/kernel"]
    (8, 24)
    """
    layer_norm = lambda path, width=hidden_dim: {f"{path}/gamma": (width,), f"{path}/beta": (width,)}  # noqa: E731
    dense = lambda path, inputs, outputs: {f"{path}/kernel": (inputs, outputs), f"{path}/bias": (outputs,)}  # noqa: E731
    width = embedding_dim or hidden_dim
    shapes = {"embedding/token_embedding/embeddings": (vocabulary_size, width)}
    if num_segments:
        shapes["embedding/segment_embedding/embeddings"] = (num_segments, width)
    shapes.update({"embedding/position_embedding/embeddings": (max_sequence_length, width),
                   **layer_norm("embedding/layer_norm", width)})
    if embedding_dim:
        shapes.update(dense("embedding_projection", embedding_dim, hidden_dim))
    for index in range(num_blocks):
        block = f"encoder_block_{index}"
        shapes.update({
            **dense(f"{block}/attention/qkv_dense", hidden_dim, 3 * hidden_dim),
            **dense(f"{block}/attention/output_dense", hidden_dim, hidden_dim),
            **layer_norm(f"{block}/attention_layer_norm"),
            **dense(f"{block}/intermediate_dense", hidden_dim, intermediate_dim),
            **dense(f"{block}/output_dense", intermediate_dim, hidden_dim),
            **layer_norm(f"{block}/output_layer_norm"),
        })
    if normalize_first:
        shapes.update(layer_norm("final_layer_norm"))
    if use_pooler:
        shapes.update(dense("pooler", hidden_dim, hidden_dim))
    return shapes


def check_layouts_fit(weight_shapes):
    """Under a `ModelParallel` distribution: ValueError, before any weight is created, if a layout of
    its map has the wrong rank for the weight it matches, splits a dimension that its mesh axis does
    not divide, or if no layout matches any weight of the backbone (a map made for another model)."""
    distribution = keras.distribution.distribution()
    if not isinstance(distribution, keras.distribution.ModelParallel):
        return
    mesh = distribution.device_mesh
    matched = False
    for path, shape in weight_shapes.items():
        layout = distribution.get_tensor_layout(path)  # the layout map's entry for this path
        if layout is None:
            continue
        matched = True
        if len(layout.axes) != len(shape):
            raise ValueError(f"The layout map gives {path} (shape {shape}) the layout {layout.axes}, of "
                             f"rank {len(layout.axes)}: a layout needs one axis name (or None) per dimension.")
        for size, axis in zip(shape, layout.axes):
            devices = mesh.shape[mesh.axis_names.index(axis)] if axis is not None else 1
            if size % devices:
                raise ValueError(
                    f"The layout map splits {path} (shape {shape}) over mesh axis {axis!r}, whose "
                    f"{devices} devices do not divide its dimension {size}. Use a mesh axis size that "
                    f"divides it, or give that dimension None in the layout map (replicated)."
                )
    if not matched:
        raise ValueError(
            f"No pattern of the ModelParallel layout map matches a weight of this BertBackbone (paths "
            f"like {list(weight_shapes)[5]!r}): it was made for another model. Use "
            f"`BertBackbone.get_layout_map(device_mesh)`."
        )
