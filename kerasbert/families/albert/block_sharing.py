"""Cross-layer parameter sharing (ALBERT): which encoder block each layer of a backbone applies.

The encoder has `num_block_groups` groups of `blocks_per_group` distinct blocks; layer `i` of `num_layers`
runs every block of group `int(i / (num_layers / num_block_groups))`, as HF `AlbertTransformer` does. No
groups (None) is BERT: every layer its own block.

Examples:
    >>> block_order(num_layers=4, num_block_groups=1, blocks_per_group=1)  # ALBERT: one block, four times
    [0, 0, 0, 0]
    >>> block_order(num_layers=4, num_block_groups=2, blocks_per_group=2)
    [0, 1, 0, 1, 2, 3, 2, 3]
"""


def check_block_sharing(num_layers, num_block_groups, blocks_per_group):
    """A ValueError naming the argument when the groups do not fit `num_layers`."""
    if num_block_groups is not None and (
        isinstance(num_block_groups, bool) or not isinstance(num_block_groups, int)
        or not 1 <= num_block_groups <= num_layers
    ):
        raise ValueError(f"num_block_groups must be None (no sharing) or an int from 1 to num_layers={num_layers} "
                         f"(HF ALBERT's num_hidden_groups), got {num_block_groups!r}.")
    if isinstance(blocks_per_group, bool) or not isinstance(blocks_per_group, int) or blocks_per_group < 1:
        raise ValueError(f"blocks_per_group must be an int >= 1 (HF ALBERT's inner_group_num), got "
                         f"{blocks_per_group!r}.")


def block_order(num_layers, num_block_groups, blocks_per_group):
    """The index of the distinct block that each step of the encoder applies, in order (see the module)."""
    groups = num_block_groups or num_layers
    return [int(layer / (num_layers / groups)) * blocks_per_group + inner
            for layer in range(num_layers) for inner in range(blocks_per_group)]
