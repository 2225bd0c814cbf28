"""What of a backbone HF `BertModel` (or the HF model of its family) cannot hold: changed computation and
weights without an HF name.

A backbone with a research block (another scoring function, a gated residual, a scaled
feed-forward) still has every stock weight, so an HF folder could be written, but HF would load it
into stock BERT and compute something else. `check_hf_expressible` refuses that export by name;
`allow_lossy=True` turns the refusal into a warning. The kerasbert preset format keeps everything.

Examples:
    >>> check_hf_expressible(BertBackbone(**config, encoder_block=GatedBlock))
    ValueError: An HF BERT folder cannot hold this backbone: GatedBlock (a TransformerEncoderBlock)
    overrides build, call; 6 weight(s) have no HF name (encoder_block_0/gate, ...). ...
"""

import warnings

from kerasbert.families.checkpoint_weights import weight_links
from kerasbert.families.family import family_named
from kerasbert.layers.attention import MultiHeadSelfAttention
from kerasbert.layers.embedding import TokenSegmentPositionEmbedding
from kerasbert.layers.encoder_block import TransformerEncoderBlock

# The methods that decide what a layer computes or which weights it has (other stock layers: build, call).
COMPUTING_METHODS = {
    TokenSegmentPositionEmbedding: ("build", "call"),
    TransformerEncoderBlock: ("build", "call", "feed_forward", "normalize", "make_attention",
                              "make_feed_forward", "make_layer_norm"),
    MultiHeadSelfAttention: ("build", "call", "attention_scores", "split_heads", "fused_context", "project_heads",
                             "project_output"),
}


def overridden_methods(layer, stock_class):
    """The computing methods of `stock_class` that `layer`'s class replaces."""
    return [name for name in COMPUTING_METHODS.get(stock_class, ("build", "call"))
            if getattr(type(layer), name) is not getattr(stock_class, name)]


def changed_computation(layer, stock_class):
    """A sentence on how `layer` computes otherwise than `stock_class` (None: it does not)."""
    name = type(layer).__name__
    if not isinstance(layer, stock_class):
        return f"{name} replaces {stock_class.__name__}"
    changed = overridden_methods(layer, stock_class)
    if changed:
        return f"{name} (a {stock_class.__name__}) overrides {', '.join(changed)}"
    return None


def stock_layers(backbone):
    """`(layer, stock class)` of each computing layer of `backbone`: BERT's, or those the family's `weights`
    name (MobileBERT's own layers)."""
    names = family_named(backbone.family).weights
    if hasattr(names, "stock_layers"):
        return list(names.stock_layers(backbone))
    layers = [(backbone.embedding, TokenSegmentPositionEmbedding)]
    for block in backbone.encoder_blocks:
        layers += [(block, TransformerEncoderBlock), (block.attention, MultiHeadSelfAttention)]
    return layers


def hf_inexpressible(backbone):
    """Sentences naming what an HF folder of `backbone` would lose ([] when nothing)."""
    layers = stock_layers(backbone)
    problems = []
    for layer, stock_class in layers:
        problem = changed_computation(layer, stock_class)
        if problem and problem not in problems:
            problems.append(problem)
    try:
        linked = {id(variable) for variable, _, _ in weight_links(backbone)}
    except AttributeError as error:  # a replaced layer without the stock sub-layers
        raise ValueError(f"An HF {backbone.family} folder cannot hold this backbone: {'; '.join(problems)}, and "
                         f"it lacks weights that HF {backbone.family} has ({error}). Save it with "
                         "save_to_preset(folder) (the kerasbert format keeps every weight and the block "
                         "class).") from None
    task_model_weights = getattr(family_named(backbone.family).weights, "task_model_weights", lambda _: [])
    linked |= {id(variable) for variable in task_model_weights(backbone)}  # HF's task models hold them
    unnamed = [variable.path for variable in backbone.weights if id(variable) not in linked]
    if unnamed:
        problems.append(f"{len(unnamed)} weight(s) have no HF name ({', '.join(unnamed[:4])}"
                        f"{', ...' if len(unnamed) > 4 else ''})")
    return problems


def check_hf_expressible(backbone, allow_lossy=False):
    """Raise ValueError (or, with `allow_lossy`, warn) when an HF folder cannot hold `backbone`."""
    problems = hf_inexpressible(backbone)
    if not problems:
        return
    message = (f"An HF {backbone.family} folder cannot hold this backbone: {'; '.join(problems)}. HF "
               f"transformers would load the stock-BERT weights into a stock {backbone.family} and compute "
               "something else.")
    if not allow_lossy:
        raise ValueError(f"{message} Save it with save_to_preset(folder) (the kerasbert format keeps "
                         "every weight and the block class), or pass allow_lossy=True to write the "
                         "stock-BERT part anyway.")
    warnings.warn(f"{message} Writing the stock-BERT part only (allow_lossy=True).", stacklevel=3)
