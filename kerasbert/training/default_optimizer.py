"""The optimizer `fit` compiles with unless you compile yourself: AdamW (or LAMB) with warmup and linear decay,
no weight decay on norms and biases, a learning rate by model size, optional gradient accumulation.

Examples:
    >>> optimizer = create_optimizer(total_steps=1000, learning_rate=5e-5)
"""

import math
import numbers

from kerasbert.training.fit_arguments import check_learning_rate
from kerasbert.training.lamb import Lamb
from kerasbert.training.optimizers import AdamW
from kerasbert.training.schedules import WarmupLinearDecay

# Variable names that are excluded from weight decay: every bias, LayerNorm gamma and beta.
NO_DECAY_NAMES = ["bias", "gamma", "beta"]


def default_learning_rate(hidden_dim, fine_tuning="full"):
    """A fine-tuning learning rate suited to the model size (BERT paper range 2e-5 .. 5e-5), and 1e-3 where few
    weights train (`fine_tuning` "frozen", "adapters", "lora": the rate their papers and kerasbert's runs use;
    at the full-fine-tuning rate LoRA on UCI sentiment stays at chance after 2 epochs).

    Examples:
        >>> default_learning_rate(384), default_learning_rate(768), default_learning_rate(1024)
        (5e-05, 3e-05, 2e-05)
        >>> default_learning_rate(384, "lora")
        0.001
    """
    if fine_tuning != "full":
        return 1e-3
    if hidden_dim <= 512:
        return 5e-5
    if hidden_dim <= 768:
        return 3e-5
    return 2e-5


OPTIMIZER_NAMES = ("adamw", "lamb")


def create_optimizer(total_steps, learning_rate, warmup_fraction=0.1, weight_decay=0.01,
                     global_clipnorm=1.0, layer_decay=None, optimizer="adamw", gradient_accumulation_steps=None):
    """AdamW (torch's epsilon placement) with `WarmupLinearDecay`, no weight decay on biases and
    LayerNorm, gradients clipped to a global norm of 1 (the settings of HF `Trainer`). `layer_decay`
    (e.g. 0.9): layer-wise learning-rate decay, each block below the top trains `layer_decay` times slower
    (`layer_rate_multipliers`).

    `optimizer="lamb"`: `Lamb` (large batches) with the same schedule and exclusions, epsilon 1e-6 as
    the LAMB paper. `gradient_accumulation_steps=k`: update once every k batches with their mean gradient
    (Keras' optimizer option), so k batches of b train as one of k*b; `total_steps` counts updates.

    Examples:
        >>> optimizer = create_optimizer(total_steps=1000, learning_rate=5e-5)
        >>> classifier.compile(optimizer=create_optimizer(1000, 1e-4, layer_decay=0.9), loss=..., metrics=...)
        >>> optimizer = create_optimizer(500, 2e-3, optimizer="lamb", gradient_accumulation_steps=32)
    """
    check_optimizer_name(optimizer)
    check_accumulation_steps(gradient_accumulation_steps)
    # HF Trainer's `get_warmup_steps`: ceil(warmup_ratio * total_steps).
    schedule = WarmupLinearDecay(learning_rate, math.ceil(warmup_fraction * total_steps), total_steps)
    kind, epsilon = (Lamb, 1e-6) if optimizer == "lamb" else (AdamW, 1e-8)
    created = kind(
        learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9, beta_2=0.999,
        epsilon=epsilon, global_clipnorm=global_clipnorm, layer_decay=layer_decay,
        gradient_accumulation_steps=gradient_accumulation_steps,
    )
    created.exclude_from_weight_decay(var_names=NO_DECAY_NAMES)
    return created


def check_accumulation_steps(steps):
    """None (no accumulation) or an int >= 2."""
    if steps is None:
        return
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise TypeError(f"gradient_accumulation_steps must be an int >= 2 or None, got {type(steps).__name__} "
                        f"{steps!r}.")
    if steps < 2:
        raise ValueError(f"gradient_accumulation_steps must be an int >= 2 (or None for no accumulation), got {steps}.")


def check_optimizer_name(optimizer):
    """One of `OPTIMIZER_NAMES`."""
    if optimizer not in OPTIMIZER_NAMES:
        raise ValueError(f"optimizer must be one of {list(OPTIMIZER_NAMES)}, got {optimizer!r}; for another "
                         "optimizer call compile(optimizer=...) yourself.")


def updates_of(batches, gradient_accumulation_steps):
    """The optimizer updates that `batches` batches make (one every `gradient_accumulation_steps`); a count of
    batches the steps do not divide is refused, as its last batches' gradients would never be applied.

    Examples:
        >>> updates_of(120, 4), updates_of(120, None)
        (30, 120)
    """
    if not gradient_accumulation_steps:
        return batches
    if batches % gradient_accumulation_steps:
        divisors = [k for k in range(2, min(batches, 64) + 1) if batches % k == 0]
        raise ValueError(f"gradient_accumulation_steps={gradient_accumulation_steps} does not divide the {batches} "
                         f"batches of this fit: the last {batches % gradient_accumulation_steps} would be accumulated "
                         f"but never applied. Choose steps that divide {batches} (e.g. {divisors[:6] or 'none'}), "
                         "or another batch_size or number of epochs.")
    return batches // gradient_accumulation_steps


def fit_optimizer_options(learning_rate, optimizer, gradient_accumulation_steps, own_optimizer):
    """A task `fit`'s optimizer keywords, checked, as `compile_defaults` takes them; LAMB or accumulation are refused
    for a model compiled with the user's own optimizer (`own_optimizer`), which `fit` keeps."""
    check_learning_rate(learning_rate)
    check_accumulation_steps(gradient_accumulation_steps)
    check_optimizer_name(optimizer)
    if own_optimizer and (optimizer != "adamw" or gradient_accumulation_steps):
        raise ValueError("This model was compiled with your own optimizer, which fit keeps: give it the "
                         "accumulation or LAMB there (kerasbert.training.create_optimizer(..., optimizer="
                         "'lamb', gradient_accumulation_steps=k)), or compile() nothing and let fit choose.")
    return {"learning_rate": learning_rate, "optimizer": optimizer,
            "gradient_accumulation_steps": gradient_accumulation_steps}
