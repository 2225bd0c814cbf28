"""Checks of an XLNetBackbone's optional inputs (memory, permutation mask, target mapping) and its attention masks."""

from keras import ops


def static_dim(tensor, axis):
    """A tensor's size along `axis` when known before running (None inside a graph with a free dimension)."""
    size = tensor.shape[axis]
    return None if size is None else int(size)


def check_memory(memory, token_ids, num_layers, hidden_dim):
    """A ValueError naming the fix when `memory` is not one `[batch, M, hidden_dim]` tensor per layer, all of one M."""
    if not isinstance(memory, (list, tuple)) or len(memory) != num_layers:
        raise ValueError(f"memory must be a list of {num_layers} tensors, one [batch, M, {hidden_dim}] per layer "
                         f"(the new_memory of the previous call); got {type(memory).__name__}"
                         f"{f' of {len(memory)}' if isinstance(memory, (list, tuple)) else ''}.")
    batch = static_dim(token_ids, 0)
    shapes = [tuple(layer_memory.shape) for layer_memory in memory]
    for index, shape in enumerate(shapes):
        if len(shape) != 3 or shape[2] != hidden_dim or None not in (batch, shape[0]) and shape[0] != batch:
            raise ValueError(f"memory[{index}] has shape {shape}; each layer's memory is [batch, M, {hidden_dim}] "
                             f"with the batch of token_ids ({batch}). Pass the new_memory of the previous call on "
                             "the same batch rows.")
    if len({shape[1] for shape in shapes}) > 1:
        raise ValueError(f"memory lengths differ between layers ({[shape[1] for shape in shapes]}); pass the "
                         "new_memory of one previous call unchanged.")


def check_permutation(perm_mask, target_mapping, token_ids):
    """A ValueError naming the fix unless `perm_mask` `[batch, T, T]` and `target_mapping` `[batch, P, T]` come
    together (or neither). HF accepts either alone (a mask alone then restricts only the content stream; a
    mapping alone lets each prediction see its own token): as permutation-LM inputs they belong together."""
    if (perm_mask is None) != (target_mapping is None):
        given, missing = ("perm_mask", "target_mapping") if target_mapping is None else ("target_mapping", "perm_mask")
        raise ValueError(f"{given} was given without {missing}: permutation LM inputs come in pairs, perm_mask "
                         "[batch, T, T] (1 where position i may not see position j) and target_mapping [batch, P, T] "
                         "(one-hot rows: the positions the query stream predicts). Pass both, or neither for the "
                         "content stream alone.")
    if perm_mask is None:
        return
    length = static_dim(token_ids, 1)
    for name, tensor, expected in (("perm_mask", perm_mask, "[batch, T, T]"),
                                   ("target_mapping", target_mapping, "[batch, P, T]")):
        shape = tuple(tensor.shape)
        if len(shape) != 3 or None not in (length, shape[2]) and shape[2] != length \
                or name == "perm_mask" and None not in (length, shape[1]) and shape[1] != length:
            raise ValueError(f"{name} has shape {shape}; it must be {expected} with T = {length}, the length of "
                             "token_ids.")


def attention_masks(padding_mask, perm_mask, memory_length):
    """`(content mask, query mask)` `[batch, T, memory + T]`, 1 where query i may attend to key j, as HF
    `XLNetModel` builds them: a key is hidden when it is padding or `perm_mask` hides it; the memory is always
    visible; the content stream also sees its own position. `perm_mask` None: the query mask is None."""
    padding = 1.0 - ops.cast(padding_mask, "float32")[:, None, :]
    hidden = padding if perm_mask is None else padding + ops.cast(perm_mask, "float32")
    if memory_length:
        memory = ops.repeat(ops.zeros_like(hidden[:, :, :1]), memory_length, axis=2)
        hidden = ops.concatenate([memory, hidden], axis=2)
    hidden = ops.cast(hidden > 0, "float32")
    length = ops.shape(padding_mask)[1]
    own_position = ops.pad(ops.eye(length), ((0, 0), (memory_length, 0)))
    content_mask = 1.0 - ops.cast(hidden - own_position[None] > 0, "float32")
    return content_mask, None if perm_mask is None else 1.0 - hidden
