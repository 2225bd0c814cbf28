"""ModernBertBackbone: ModernBERT's encoder (rotary positions, alternating global and local attention, GeGLU,
pre-norm, no biases) as a functional keras.Model."""

import keras

from kerasbert.families.bert.bert_backbone import (
    backbone_outputs,
    run_blocks,
)
from kerasbert.families.checkpoint_weights import dense_links, norm_links
from kerasbert.families.family_backbone import FamilyBackbone
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.modernbert_encoder_block import ModernBertEncoderBlock
from kerasbert.layers.prediction_head import PredictionHead
from kerasbert.presets.hf_families import HF_ACTIVATIONS
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS

# What BertBackbone has and ModernBertBackbone has not: task models and fine-tuning modes may ask for them.
PARAMETER_EFFICIENT = ("adapter_size", "lora_rank")


def check_modernbert_config(num_layers, local_attention, global_attn_every_n_layers, classifier_pooling,
                            classifier_activation):
    """ValueErrors naming the fix for a layer pattern or a task head HF `ModernBertConfig` cannot build."""
    if classifier_pooling not in ("cls", "mean"):
        raise ValueError(f"classifier_pooling={classifier_pooling!r}: HF ModernBERT pools by 'cls' or 'mean'.")
    if classifier_activation not in HF_ACTIVATIONS:
        raise ValueError(f"classifier_activation={classifier_activation!r} is not one of the HF activations "
                         f"kerasbert computes: {sorted(HF_ACTIVATIONS)}.")
    if not isinstance(global_attn_every_n_layers, int) or global_attn_every_n_layers < 1:
        raise ValueError(f"global_attn_every_n_layers must be a positive int (1: every layer global), got "
                         f"{global_attn_every_n_layers!r}.")
    if num_layers > 1 and global_attn_every_n_layers > 1 and (not local_attention or local_attention < 2):
        raise ValueError(f"local_attention={local_attention!r}: the local layers need a window of 2 tokens or "
                         "more (HF local_attention, 128 in answerdotai/ModernBERT-base).")


@keras.saving.register_keras_serializable(package="kerasbert")
class ModernBertBackbone(FamilyBackbone, keras.Model):
    """ModernBERT (Warner et al., 2024) as HF `ModernBertModel` computes it on a padded batch.

    Token embeddings and a LayerNorm (no positions, no segments), then `num_layers` pre-norm
    `ModernBertEncoderBlock`s: layer `i` attends globally when `i % global_attn_every_n_layers == 0` (rotary
    base `global_rope_theta`), else within `local_attention` tokens (`|i - j| <= local_attention // 2`, base
    `local_rope_theta`); layer 0 has no attention norm, as in HF. A final LayerNorm gives `sequence_output`.

    Inputs are `BertBackbone`'s; `segment_ids` is accepted and ignored (ModernBERT has no segment embeddings).
    Outputs: `sequence_output` (after the final norm), `pooled_output` (the `[CLS]` state of
    `sequence_output`: HF's base model has no pooler), and with `output_hidden_states` the embedding output
    and each block's output, the last one after the final norm (HF's `hidden_states`), with `output_attentions` each
    block's probabilities. With `unpadded` (TensorFlow) each block's projections and feed-forward half run on the
    real tokens only, as in HF's unpadded (flash-attention) execution; attention masks the padding. The real tokens'
    values are the same either way. Defaults are HF `ModernBertConfig()`'s (ModernBERT-base).
    No adapters or LoRA (its blocks are no `TransformerEncoderBlock`s).

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim: the size (`intermediate_dim` is the
            GeGLU inner width: HF `intermediate_size`).
        max_sequence_length: HF `max_position_embeddings` (rotary: no table; kept for the tokenizer's length).
        local_attention, global_attn_every_n_layers, global_rope_theta, local_rope_theta: as HF.
        norm_bias, attention_bias, mlp_bias: as HF (all False in ModernBERT-base).
        dropout: HF `mlp_dropout`. attention_dropout, embedding_dropout: as HF.
        activation: HF `hidden_activation`. layer_norm_epsilon: HF `norm_eps`.
        classifier_pooling, classifier_activation, classifier_bias: HF's, of the head its task models put before
            their logits layer (`task_transform`): "cls" or "mean", an HF activation name, a bias on its Dense.
        unpadded: run the projections and feed-forward halves on the real tokens only
            (`kb.layers.ModernBertEncoderBlock`) on TensorFlow; JAX (static shapes) and torch (slower so) keep the
            padding.
        initializer_range, output_hidden_states, output_attentions, dtype: as `BertBackbone`.

    Examples:
        >>> ModernBertBackbone().count_params()  # HF ModernBertModel(ModernBertConfig()).num_parameters()
        149014272
    """

    family = "modernbert"  # the HF model_type whose checkpoints name this class's weights
    # Fine-tuned HF ModernBERT task models: `classifier` after `head` (a `PredictionHead`: `task_transform`).
    hf_heads = {"BertClassifier": ("classifier", "ModernBertForSequenceClassification"),
                "BertTokenClassifier": ("classifier", "ModernBertForTokenClassification"),
                "BertQuestionAnswerer": ("classifier", "ModernBertForQuestionAnswering"),
                "BertMultipleChoice": ("classifier", "ModernBertForMultipleChoice")}
    config_names = (  # the constructor arguments get_config returns
        "vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "max_sequence_length",
        "local_attention", "global_attn_every_n_layers", "global_rope_theta", "local_rope_theta", "norm_bias",
        "attention_bias", "mlp_bias", "dropout", "attention_dropout", "embedding_dropout", "activation",
        "layer_norm_epsilon", "initializer_range", "classifier_pooling", "classifier_activation", "classifier_bias",
        "unpadded", "output_hidden_states", "output_attentions")

    def __init__(self, vocabulary_size=50368, num_layers=22, num_heads=12, hidden_dim=768, intermediate_dim=1152,
                 max_sequence_length=8192, local_attention=128, global_attn_every_n_layers=3,
                 global_rope_theta=160000.0, local_rope_theta=10000.0, norm_bias=False, attention_bias=False,
                 mlp_bias=False, dropout=0.0, attention_dropout=0.0, embedding_dropout=0.0, activation="gelu",
                 layer_norm_epsilon=1e-5, initializer_range=0.02, classifier_pooling="cls",
                 classifier_activation="gelu", classifier_bias=False, unpadded=False, output_hidden_states=False,
                 output_attentions=False, dtype=None, **kwargs):
        asked = [name for name in PARAMETER_EFFICIENT if kwargs.pop(name, None)]
        if asked:
            raise ValueError(f"ModernBertBackbone has no adapters or LoRA updates ({', '.join(asked)} given): its "
                             "blocks are ModernBertEncoderBlocks. Fine-tune it with fine_tuning='full' or 'frozen'.")
        check_modernbert_config(num_layers, local_attention, global_attn_every_n_layers, classifier_pooling,
                                classifier_activation)

        # === Layers ===
        token_embedding = keras.layers.Embedding(vocabulary_size, hidden_dim, dtype=dtype, name="token_embedding",
                                                 embeddings_initializer=weight_initializer(initializer_range))
        embedding_norm = keras.layers.LayerNormalization(epsilon=layer_norm_epsilon, center=norm_bias, dtype=dtype,
                                                         name="embedding_norm")
        embedding_dropout_layer = keras.layers.Dropout(embedding_dropout, dtype=dtype, name="embedding_dropout")
        blocks = []
        for i in range(num_layers):
            is_global = i % global_attn_every_n_layers == 0
            blocks.append(ModernBertEncoderBlock(
                num_heads, intermediate_dim, global_rope_theta if is_global else local_rope_theta,
                None if is_global else local_attention, i > 0, norm_bias, attention_bias, mlp_bias, activation,
                dropout, attention_dropout, layer_norm_epsilon, initializer_range, unpadded, dtype=dtype,
                name=f"encoder_block_{i}",
            ))
        final_norm = keras.layers.LayerNormalization(epsilon=layer_norm_epsilon, center=norm_bias, dtype=dtype,
                                                     name="final_norm")

        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in PACKED_INPUTS}
        x = embedding_dropout_layer(embedding_norm(token_embedding(inputs["token_ids"])))
        x, hidden_states, attentions = run_blocks(blocks, x, inputs["padding_mask"], output_attentions)
        x = hidden_states[-1] = final_norm(x)  # HF's last hidden state is after the final norm
        outputs = backbone_outputs(x, None, hidden_states, attentions, output_hidden_states, output_attentions)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        self.keep_config(locals())
        self.num_segments = 0  # no segment embeddings: segment_ids are ignored
        self.token_embedding = token_embedding
        self.embedding_norm = embedding_norm
        self.embedding_projection = None
        self.encoder_blocks = blocks
        self.final_layer_norm = final_norm
        self.pooler = None

    @property
    def head_activation(self):
        """kerasbert's name of `classifier_activation`: the task heads' and the masked-LM head's activation."""
        return HF_ACTIVATIONS[self.classifier_activation]

    def task_transform(self, task_name, reads, name):
        """A fresh `PredictionHead` for the head of any task model (`task_name`) that reads `reads`
        ("pooled_output": one vector an example, mean-pooled with classifier_pooling="mean"; "sequence_output":
        every token), as HF's task models put before their `classifier`; `task_transform_links` names its weights
        in their checkpoints. `name`: the layer's name."""
        pooling = "mean" if reads == "pooled_output" and self.classifier_pooling == "mean" else None
        return PredictionHead(self.head_activation, self.classifier_bias, self.norm_bias,
                              self.layer_norm_epsilon, pooling, self.initializer_range, name=name)

    @staticmethod
    def task_transform_links(transform):
        """`(variable, hf_names, kind)` of a `task_transform` layer under HF's `head.*` names (every ModernBERT
        task model's, the masked LM's too)."""
        yield from dense_links(transform.dense, "head.dense")
        yield from norm_links(transform.norm, "head.norm")
