"""LongformerBackbone: RoBERTa's embeddings and BERT's post-LN blocks with sliding-window and global attention
(Beltagy et al., 2020), as a functional keras.Model."""

import keras
import numpy as np
from keras import ops

from kerasbert.families.bert.bert_backbone import backbone_outputs, run_blocks
from kerasbert.families.family_backbone import FamilyBackbone
from kerasbert.families.longformer.global_tokens import GlobalTokens
from kerasbert.layers.embedding import TokenSegmentPositionEmbedding
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.longformer_encoder_block import LongformerEncoderBlock
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS

GLOBAL_INPUT = "global_attention_mask"
# What BertBackbone has and LongformerBackbone has not: task models and fine-tuning modes may ask for them.
PARAMETER_EFFICIENT = ("adapter_size", "lora_rank")


def layer_windows(attention_window, num_layers):
    """HF `attention_window` (an int, or one per layer) as a list of `num_layers` windows, or a ValueError."""
    windows = [attention_window] * num_layers if isinstance(attention_window, int) else list(attention_window)
    if len(windows) != num_layers:
        raise ValueError(f"attention_window has {len(windows)} windows for {num_layers} layers: give one int, or "
                         "one window per layer (HF attention_window).")
    return windows


@keras.saving.register_keras_serializable(package="kerasbert")
class LongformerBackbone(FamilyBackbone, keras.Model):
    """Longformer as HF `LongformerModel` computes it on a padded batch.

    RoBERTa's embeddings (positions counted after `padding_token_id`), then `num_layers` post-LN blocks whose
    self-attention (`LongformerSelfAttention`) sees `attention_window // 2` tokens either side, plus the global
    tokens; global tokens attend to the whole sequence with their own projections. The pooler (dense + tanh on
    `<s>`) gives `pooled_output`.

    Inputs: `BertBackbone`'s, and `global_attention_mask` `[B, T]` (1 on global tokens; left out: zeros).
    `global_tokens` adds HF's task defaults: "cls" makes `<s>` global (HF's classifiers), "question" every token
    before the first `sep_token_id` (HF's question answering), "after_question" every token after the
    `</s></s>` that ends the first segment (HF's multiple choice); task models built by `from_preset` set it (see
    `task_settings`). HF pads the input to a multiple of the window and strips the padding back; here each
    layer's `banded_attention` pads to a multiple of its half window, with the same outputs. Each row may have
    at most `max_global_tokens` global tokens (a static bound, so that JAX compiles it; see
    `kerasbert.layers.longformer_attention`). No adapters, LoRA or `output_attentions`. Defaults are
    allenai/longformer-base-4096's (4,096 tokens).

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim: the size, as `RobertaBackbone`.
        dropout, attention_dropout, max_sequence_length, num_segments, activation: as `RobertaBackbone`.
        layer_norm_epsilon, initializer_range, padding_token_id, output_hidden_states: as `RobertaBackbone`.
        attention_window: HF `attention_window`: an even int, or one per layer.
        sep_token_id: HF `sep_token_id` (ends the question of `global_tokens="question"`).
        global_tokens: "none", "cls", "question" or "after_question" (above). max_global_tokens: the bound above.
        output_attentions: must be False (Longformer's probabilities are no `[T, T]` matrix).

    Examples:
        >>> backbone = LongformerBackbone.from_preset("my_longformer_folder")
        >>> outputs = backbone({**packed, "global_attention_mask": question_mask})
    """

    family = "longformer"  # the HF model_type whose checkpoints name this class's weights
    config_names = (  # the constructor arguments get_config returns
        "vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "dropout",
        "attention_dropout", "max_sequence_length", "num_segments", "activation", "layer_norm_epsilon",
        "initializer_range", "padding_token_id", "sep_token_id", "attention_window", "global_tokens",
        "max_global_tokens", "output_hidden_states", "output_attentions")
    # What task models built by `Task.from_preset` set: HF's default global tokens of its task model.
    task_settings = {"BertClassifier": {"global_tokens": "cls"}, "BertQuestionAnswerer": {"global_tokens": "question"},
                     "BertMultipleChoice": {"global_tokens": "after_question"}}
    # A fine-tuned LongformerForSequenceClassification's head: `classifier.dense` is the pooler, `out_proj` the logits.
    hf_heads = {"BertClassifier": ("classifier.out_proj", "LongformerForSequenceClassification"),
                "BertTokenClassifier": ("classifier", "LongformerForTokenClassification"),
                "BertMultipleChoice": ("classifier", "LongformerForMultipleChoice")}
    task_pooler = ("classifier.dense", "LongformerForSequenceClassification")  # dense + tanh on `<s>`

    def __init__(self, vocabulary_size=50265, num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072,
                 dropout=0.1, attention_dropout=0.1, max_sequence_length=4098, num_segments=1, activation="gelu",
                 layer_norm_epsilon=1e-5, initializer_range=0.02, padding_token_id=1, sep_token_id=2,
                 attention_window=512, global_tokens="none", max_global_tokens=128, output_hidden_states=False,
                 output_attentions=False, dtype=None, **kwargs):
        asked = [name for name in PARAMETER_EFFICIENT if kwargs.pop(name, None)]
        if asked:
            raise ValueError(f"LongformerBackbone has no adapters or LoRA updates ({', '.join(asked)} given): fine-"
                             "tune it with fine_tuning='full' or 'frozen'.")
        if output_attentions:
            raise ValueError("LongformerBackbone returns no attention probabilities (a window and global columns, "
                             "not a [T, T] matrix): build it with output_attentions=False.")
        windows = layer_windows(attention_window, num_layers)

        # === Layers ===
        embedding = TokenSegmentPositionEmbedding(
            vocabulary_size, hidden_dim, max_sequence_length, num_segments, dropout, layer_norm_epsilon,
            initializer_range, padding_token_id, dtype=dtype, name="embedding")
        global_layer = GlobalTokens(global_tokens, sep_token_id, dtype=dtype, name="global_tokens")
        blocks = [LongformerEncoderBlock(
            num_heads, intermediate_dim, window=window, max_global_tokens=max_global_tokens, activation=activation,
            dropout=dropout, attention_dropout=attention_dropout, layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range, dtype=dtype, name=f"encoder_block_{i}",
        ) for i, window in enumerate(windows)]
        pooler = keras.layers.Dense(hidden_dim, activation="tanh", dtype=dtype, name="pooler",
                                    kernel_initializer=weight_initializer(initializer_range))

        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in (*PACKED_INPUTS,
                                                                                          GLOBAL_INPUT)}
        x = embedding(inputs["token_ids"], inputs["segment_ids"])
        is_global = global_layer(inputs["token_ids"], inputs["padding_mask"], inputs[GLOBAL_INPUT])
        x, hidden_states, attentions = run_blocks(blocks, x, inputs["padding_mask"], False,
                                                  global_attention_mask=is_global)
        outputs = backbone_outputs(x, pooler, hidden_states, attentions, output_hidden_states, False)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        self.keep_config(locals())
        self.embedding = embedding
        self.token_embedding = embedding.token_embedding
        self.embedding_projection = None
        self.encoder_blocks = blocks
        self.final_layer_norm = None
        self.pooler = pooler

    @property
    def input(self):
        """`BertBackbone`'s inputs, what task models build on (their global tokens come from `global_tokens`)."""
        inputs = super().input
        return {name: inputs[name] for name in PACKED_INPUTS}

    def __call__(self, inputs, *args, **kwargs):
        """Call on `BertBackbone`'s inputs, `global_attention_mask` optional (left out: no token is global
        but those of `global_tokens`)."""
        if isinstance(inputs, dict) and GLOBAL_INPUT not in inputs:
            mask = inputs["padding_mask"]  # numpy stays numpy: Keras takes no mix of arrays and tensors
            inputs = {**inputs, GLOBAL_INPUT: np.zeros_like(mask) if isinstance(mask, np.ndarray)
                      else ops.zeros_like(mask)}
        return super().__call__(inputs, *args, **kwargs)
