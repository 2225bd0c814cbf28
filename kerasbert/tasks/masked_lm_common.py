"""What the masked-LM task models share (`BertMaskedLM`, `BertPretrainer`, `ElectraPretrainer`, `BertSeq2Seq`):
the masked-LM head on the backbone and its checkpoint weights, the `mask_positions` input, and the checks of
pre-training options and data.

Examples:
    >>> head = build_masked_lm_head(backbone)          # tied to the backbone's token embeddings
    >>> load_masked_lm_head(head, checkpoint, "BertMaskedLM", backbone.family)
"""

import os
import warnings

import keras
import tensorflow as tf

from kerasbert.arguments import check_count
from kerasbert.data.pretraining_examples import NEXT_SENTENCE_TASKS
from kerasbert.families.checkpoint_weights import assign_links, masked_lm_head_links
from kerasbert.families.family_heads import masked_lm_head_names
from kerasbert.families.sequence_length import longest_input
from kerasbert.layers.heads import MaskedLMHead
from kerasbert.presets.kerasbert_format import write_kerasbert_folder
from kerasbert.presets.model_card import model_card
from kerasbert.tasks.heads import head_features
from kerasbert.tasks.run_arguments import is_raw
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS

DOCUMENTS_HINT = ("documents (a DataFrame with a text column, a list or Series of document strings, a "
                  "file or folder path)")


def masked_lm_inputs(backbone):
    """The backbone's inputs plus `mask_positions` (int32 `[batch, P]`, the positions to predict)."""
    return {**backbone.input,
            "mask_positions": keras.Input(shape=(None,), dtype="int32", name="mask_positions")}


def masked_lm_features(backbone, inputs):
    """What a masked-LM head reads: `head_features` plus the `mask_positions` input."""
    features = head_features(backbone, {name: inputs[name] for name in PACKED_INPUTS})
    return {**features, "mask_positions": inputs["mask_positions"]}


def check_no_custom_head(head, action):
    """A ValueError for `action` (saving heads under HF names) on a task with a custom `head`."""
    if head is not None:
        raise ValueError(
            f"This model's head is a custom layer ({type(head).__name__}), which has no HF weight names, "
            f"so it cannot {action}. Save the whole model with model.save('model.keras') instead."
        )


def build_masked_lm_head(backbone):
    """A `MaskedLMHead` as HF's masked-LM head of `backbone.family` (`kerasbert.families.family_heads`): tied to
    `backbone.token_embedding` (its dense maps to that table's width), the family's activation (RoBERTa and
    ELECTRA: exact GELU; ModernBERT: its backbone's `head_activation` and `classifier_bias`; the others: the
    backbone's activation), the backbone's epsilon.

    Examples:
        >>> head = build_masked_lm_head(AlbertBackbone.from_preset("albert_base_v2", load_weights=False))
        >>> head.transform_dim, head.activation
        (128, 'gelu_approximate')
    """
    names = masked_lm_head_names(backbone.family)
    return MaskedLMHead(
        backbone.vocabulary_size, token_embedding=backbone.token_embedding,
        activation=getattr(backbone, "head_activation", None) or names.activation or backbone.activation,
        layer_norm_epsilon=backbone.layer_norm_epsilon, initializer_range=backbone.initializer_range,
        transform_dim=getattr(backbone, "embedding_dim", None),
        dense_bias=getattr(backbone, "classifier_bias", names.dense_bias),
        layer_norm_bias=getattr(backbone, "norm_bias", True), dtype=backbone.dtype_policy, name="mlm_head",
    )


UNTRAINED_HEAD_EFFECT = ("its token predictions are random until it is pre-trained (BertPretrainer.fit on "
                         "documents). The backbone weights are loaded.")


def load_masked_lm_head(head, checkpoint, task_name, family, untrained_effect=UNTRAINED_HEAD_EFFECT):
    """Load `family`'s HF masked-LM head (`cls.predictions.*` in BERT, `lm_head.*` in RoBERTa, ...) from
    `checkpoint` into `head`; warn when a checkpoint with weights has none (the head then keeps its fresh
    initialisation; `untrained_effect` ends the warning: what that means for the task)."""
    names = masked_lm_head_names(family)
    weights = checkpoint.heads(names.prefix)
    if not weights and names.alternative is not None:
        names = names.alternative
        weights = checkpoint.heads(names.prefix)
    if weights:
        check_no_unheld_biases(head, names, weights, checkpoint.source)
        assign_links(masked_lm_head_links(head, family, names), weights, checkpoint.source)
    elif checkpoint.state_dict is not None or checkpoint.keras_weights_path is not None:
        warnings.warn(
            f"{checkpoint.source} has no masked-LM head ({names.prefix}*), so the {task_name}'s head starts untrained: "
            f"{untrained_effect}",
            stacklevel=4,
        )


def check_no_unheld_biases(head, names, weights, source):
    """A ValueError when `weights` hold a bias that `head` was built without (a ModernBERT checkpoint whose weights
    have a `head.dense.bias` or `head.norm.bias` its config's `classifier_bias` / `norm_bias` deny): it would be
    dropped silently."""
    unheld = [name for name, held in ((f"{names.dense}.bias", head.dense_bias),
                                      (f"{names.layer_norm}.bias", head.layer_norm_bias)) if name in weights and not held]
    if unheld:
        raise ValueError(f"{source} has masked-LM head biases {unheld} that this head has no place for (built with "
                         f"dense_bias={head.dense_bias}, layer_norm_bias={head.layer_norm_bias}, from the family's "
                         "defaults and the backbone's config). Set the config's classifier_bias / norm_bias to what "
                         "the weights hold.")


def write_task_preset(task, folder, heads, task_config=None):
    """Write `task`'s backbone, vocabulary, head weights (HF names) and config as a kerasbert preset."""
    return write_kerasbert_folder(folder, task.backbone, task.tokenizer,
                                  task_config=task_config, heads=heads, card=model_card(task))


def check_keras_data(data, raw_hint, method):
    """A TypeError for data that is neither raw (`raw_hint` says which) nor Keras-level model inputs."""
    if not isinstance(data, (tf.data.Dataset, dict)):
        raise TypeError(
            f"{method} takes {raw_hint}, or model inputs (a tf.data.Dataset, or a dict of token_ids, "
            f"segment_ids, padding_mask and mask_positions arrays); got {type(data).__name__}."
        )


def check_options(backbone, next_sentence, max_sequence_length):
    """Errors for the options the graph depends on, before any layer is built."""
    if next_sentence not in NEXT_SENTENCE_TASKS:
        raise ValueError(f"next_sentence must be 'nsp' (BERT), 'sop' (ALBERT) or None (masked LM "
                         f"only), got {next_sentence!r}.")
    check_count("max_sequence_length", max_sequence_length, 5, longest_input(backbone),
                hint=" The most the backbone's positions hold; BERT uses 128, then 512.")


def is_documents(data):
    """Whether `data` is what `pretraining_examples` reads (not Keras-level tensors or datasets)."""
    return is_raw(data) or isinstance(data, os.PathLike)
