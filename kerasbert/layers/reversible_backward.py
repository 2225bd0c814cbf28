"""A stack of `ReversibleBlock`s whose backward pass recomputes each block's inputs from its outputs (Gomez et al.
2017; HF Reformer's `_ReversibleFunction`), so training keeps no activations inside the stack: only its outputs.

From a block's outputs `(y1, y2)` and their gradients `(dy1, dy2)`: `x2 = y2 - FeedForward(y1)` (its pullback adds
to `dy1` and gives the feed-forward weights' gradients), then `x1 = y1 - Attention(x2)` (its pullback gives `dx2`
and the attention weights'). One backend-specific piece: the custom gradient (`tf.custom_gradient`,
`jax.custom_vjp`, a `torch.autograd.Function`) and the pullback of one half-block.

The recomputation must draw what the forward pass drew: the blocks may have no dropout and LSH attention needs a
fixed `hash_seed` (`check_replayable`); HF replays its random seeds instead.
"""

import functools

import keras
from keras import ops

from kerasbert.layers.lsh_self_attention import LshSelfAttention


def check_replayable(blocks):
    """A ValueError naming the setting when a block draws random numbers in training (dropout, a fresh LSH draw)."""
    for block in blocks:
        attention = block.attention
        rates = {"dropout": block.dropout, "attention dropout": attention.attention_dropout}
        drawn = [f"{name} {rate}" for name, rate in rates.items() if rate]
        if isinstance(attention, LshSelfAttention) and attention.hash_seed is None and attention.rotations is None:
            drawn.append("LSH rotations drawn afresh (hash_seed None)")
        if drawn:
            raise ValueError(f"{block.name}: {', '.join(drawn)}. Inverting the blocks in the backward pass recomputes "
                             "them, which must draw what the forward pass drew: set dropout, lsh_attention_dropout and "
                             "local_attention_dropout to 0 and give a hash_seed, or train with remat=True instead.")


def reversible_stack(blocks, x1, x2, padding_mask):
    """`blocks` (training mode) on the two streams `[batch, T, hidden]`, storing no activations for the backward.

    Example:
        >>> y1, y2 = reversible_stack(backbone.encoder_blocks, x, x, padding_mask)
    """
    check_replayable(blocks)
    padding_mask = ops.cast(padding_mask, "bool")
    backend = keras.backend.backend()
    stack = {"tensorflow": tensorflow_stack, "jax": jax_stack, "torch": torch_stack}[backend]
    return stack(blocks, x1, x2, padding_mask)


def forward(blocks, x1, x2, padding_mask):
    for block in blocks:
        x1, x2 = block(x1, x2, padding_mask, training=True)
    return x1, x2


def backward(blocks, y1, y2, dy1, dy2, padding_mask, pullback):
    """`(dx1, dx2, [each block's weight gradients])` from the stack's outputs and their gradients.

    `pullback(block, half, x, cotangent)` returns `(half(x), dx, weight gradients)` for one half-block."""
    weight_grads = []
    for block in reversed(blocks):
        feed_forward, dy1_more, ff_grads = pullback(block, lambda y: block.chunked_feed_forward(y, True), y1, dy2)
        x2 = y2 - feed_forward
        dy1 = dy1 + dy1_more
        attended, dx2_more, attention_grads = pullback(block, lambda x: block.attend(x, padding_mask, True), x2, dy1)
        y1, y2, dy2 = y1 - attended, x2, dy2 + dx2_more
        weight_grads.insert(0, [a + b for a, b in zip(ff_grads, attention_grads)])
    return dy1, dy2, weight_grads


def tensorflow_stack(blocks, x1, x2, padding_mask):
    import tensorflow as tf

    def pullback(block, half, x, cotangent):
        weights = [variable.value for variable in block.trainable_variables]
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = half(x)
        dx, *grads = tape.gradient(out, [x, *weights], output_gradients=cotangent,
                                   unconnected_gradients=tf.UnconnectedGradients.ZERO)
        return out, dx, grads

    @tf.custom_gradient
    def stack(x1, x2, mask):
        y1, y2 = forward(blocks, x1, x2, mask)

        def gradient(dy1, dy2, variables=None):
            dx1, dx2, weight_grads = backward(blocks, y1, y2, dy1, dy2, mask, pullback)
            by_variable = {variable.value.ref(): grad for block, grads in zip(blocks, weight_grads)
                           for variable, grad in zip(block.trainable_variables, grads)}
            return (dx1, dx2, None), [by_variable[variable.ref()] for variable in variables or []]

        return (y1, y2), gradient

    return stack(x1, x2, padding_mask)


def jax_stack(blocks, x1, x2, padding_mask):
    import jax

    variables = [block.trainable_variables for block in blocks]

    def run(block_weights, half):
        """`half` as a pure function of the block's weight values (JAX differentiates arguments, not state)."""
        def pure(weights, x):
            with keras.StatelessScope(state_mapping=list(zip(block_weights, weights))):
                return half(x)
        return pure

    def stack_forward(weights, x1, x2, mask):
        with keras.StatelessScope(state_mapping=[pair for vs, ws in zip(variables, weights) for pair in zip(vs, ws)]):
            return forward(blocks, x1, x2, mask)

    @jax.custom_vjp
    def stack(weights, x1, x2, mask):
        return stack_forward(weights, x1, x2, mask)

    def stack_fwd(weights, x1, x2, mask):
        y1, y2 = stack_forward(weights, x1, x2, mask)
        return (y1, y2), (weights, y1, y2, mask)

    def stack_bwd(residuals, cotangents):
        weights, y1, y2, mask = residuals
        by_block = dict(zip(map(id, blocks), zip(variables, weights)))

        def pullback(block, half, x, cotangent):
            block_variables, block_weights = by_block[id(block)]
            out, vjp = jax.vjp(run(block_variables, half), block_weights, x)
            grads, dx = vjp(cotangent)
            return out, dx, grads

        dx1, dx2, weight_grads = backward(blocks, y1, y2, *cotangents, mask, pullback)
        return weight_grads, dx1, dx2, None

    stack.defvjp(stack_fwd, stack_bwd)
    return stack([[variable.value for variable in vs] for vs in variables], x1, x2, padding_mask)


def torch_stack(blocks, x1, x2, padding_mask):
    weights = [variable.value for block in blocks for variable in block.trainable_variables]
    return torch_function().apply(blocks, padding_mask, x1, x2, *weights)


def torch_pullback(block, half, x, cotangent):
    import torch

    weights = [variable.value for variable in block.trainable_variables]
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        out = half(x)
        dx, *grads = torch.autograd.grad(out, [x, *weights], cotangent, allow_unused=True)
    grads = [torch.zeros_like(w) if g is None else g for w, g in zip(weights, grads)]
    return out.detach(), dx, grads


@functools.cache
def torch_function():
    """The torch Function of the stack (built on first use: torch is imported on the torch backend only)."""
    import torch

    class Stack(torch.autograd.Function):
        """The stack on torch: `forward` without autograd, `backward` by inversion."""

        @staticmethod
        def forward(ctx, blocks, padding_mask, x1, x2, *weights):
            with torch.no_grad():
                y1, y2 = forward(blocks, x1, x2, padding_mask)
            ctx.blocks, ctx.padding_mask = blocks, padding_mask
            ctx.save_for_backward(y1, y2)
            return y1, y2

        @staticmethod
        def backward(ctx, dy1, dy2):
            y1, y2 = ctx.saved_tensors
            dx1, dx2, weight_grads = backward(ctx.blocks, y1, y2, dy1, dy2, ctx.padding_mask, torch_pullback)
            return (None, None, dx1, dx2, *[grad for grads in weight_grads for grad in grads])

    return Stack

