"""DebertaV3Pretrainer: DeBERTa-v3's replaced-token pre-training (He et al., 2023) with gradient-disentangled
embedding sharing, ELECTRA's pre-trainer with DeBERTa's parts."""

import contextlib
import warnings

import keras

from kerasbert.arguments import check_number
from kerasbert.data.masking_config import MaskingConfig
from kerasbert.families.checkpoint_weights import (
    assign_links,
    dense_links,
    export_links,
    masked_lm_head_links,
    norm_links,
    weight_links,
)
from kerasbert.families.deberta_v2.deberta_generator import (
    GENERATOR_SETTINGS,
    DebertaGenerator,
    deberta_generator_config_for,
    generator_weights,
)
from kerasbert.families.family_heads import masked_lm_head_names
from kerasbert.layers.gradient_disentangled_sharing import GradientDisentangledSharing
from kerasbert.layers.heads import ContextReplacedTokenHead
from kerasbert.presets.loading import load_checkpoint
from kerasbert.tasks.electra_pretrainer import ElectraPretrainer

RTD_HEAD = "mask_predictions"  # DeBERTa's LMMaskPredictionHead in its published checkpoints
SHARING_NAME = "embedding_sharing"


@keras.saving.register_keras_serializable(package="kerasbert")
class DebertaV3Pretrainer(ElectraPretrainer):
    """DeBERTa-v3 pre-training: replaced-token detection (ELECTRA's task) with gradient-disentangled embedding
    sharing (GDES), from raw documents.

    `ElectraPretrainer`'s step, loss (generator cross-entropy + `rtd_weight` (50) x discriminator sigmoid
    cross-entropy), data, metrics and evaluation, with DeBERTa-v3's parts:
    - the generator is a `DebertaGenerator`: a DeBERTa of its own with half the discriminator's layers and the
      same width (`generator_config` changes any `DebertaV2Backbone` setting but the vocabulary and width), and
      HF `DebertaV2ForMaskedLM`'s head;
    - the discriminator (`backbone`, a `DebertaV2Backbone`) reads the token table `stop_gradient(E_G) + delta`
      (`GradientDisentangledSharing`): the generator's table `E_G` learns from the masked-LM loss only, `delta`
      from the replaced-token loss only. A fresh generator starts from the discriminator's table (`delta` = 0, as
      DeBERTa's code); loaded weights set `delta` to the discriminator's table minus the generator's, so a
      pre-trained discriminator keeps reading its own. After `fit`, and in `save_to_preset`, the discriminator's
      table holds `E_G + delta`;
    - the replaced-token head is DeBERTa's (`ContextReplacedTokenHead`, `mask_predictions.*`);
    - masking is BERT's (80% `[MASK]`, 10% random, 10% kept) unless `masking` says otherwise.

    `save_to_preset(folder)` writes the discriminator (`BertClassifier.from_preset(folder)` fine-tunes it), its
    head and the generator (`generator.` + HF `DebertaV2ForMaskedLM` names); `from_preset` reads such a folder,
    or HF folders: a DeBERTa-v2/v3 discriminator (`preset`, its `mask_predictions.*` when present) and a
    `DebertaV2ForMaskedLM` generator (`generator_preset`; without one the generator starts fresh).

    Args:
        backbone: a `DebertaV2Backbone` without absolute positions (`position_biased_input=False`, as v3).
        preprocessor: a `BertPreprocessor` with a `DebertaV2Tokenizer`.
        generator_config: `DebertaV2Backbone` settings of the generator, over `deberta_generator_config_for`'s.
        rtd_weight, max_sequence_length, short_seq_prob, dupe_factor, masking, columns: as `ElectraPretrainer`.

    Examples:
        >>> backbone = DebertaV2Backbone(vocabulary_size=tokenizer.vocabulary_size(), num_layers=4, num_heads=4,
        ...                              hidden_dim=128, intermediate_dim=512, position_buckets=64)
        >>> deberta = DebertaV3Pretrainer(backbone, BertPreprocessor(tokenizer))
        >>> deberta.fit(chapters, epochs=1, batch_size=16)
        >>> deberta.save_to_preset("austen_deberta")   # then BertClassifier.from_preset("austen_deberta", ...)
    """

    default_masking = MaskingConfig()

    def __init__(self, backbone, preprocessor, generator_config=None, **kwargs):
        super().__init__(backbone, preprocessor, generator_config, **kwargs)
        self.embedding_sharing = self.get_layer(SHARING_NAME)
        # A fresh generator starts from the discriminator's table (loaded weights restart `delta` instead).
        # (A copy: on JAX, two variables holding one buffer break the training step's buffer donation.)
        self.generator.token_embedding.embeddings.assign(backbone.token_embedding.embeddings.numpy())

    @staticmethod
    def check_pretraining_options(backbone, generator_config, rtd_weight, head):
        if getattr(backbone, "family", None) != "deberta-v2":
            raise TypeError(f"DebertaV3Pretrainer trains a DebertaV2Backbone (the discriminator); got "
                            f"{type(backbone).__name__}. For ELECTRA use ElectraPretrainer; for masked-LM "
                            "pre-training BertPretrainer.")
        if backbone.position_biased_input:
            raise ValueError("DebertaV3Pretrainer shares the token table only; this backbone has absolute position "
                             "embeddings (position_biased_input=True, DeBERTa-v2), which DeBERTa's code would share "
                             "too. Use position_biased_input=False (DeBERTa-v3), or BertPretrainer.")
        deberta_generator_config_for(backbone, generator_config)  # its errors, before any layer is built
        check_number("rtd_weight", rtd_weight, 0, low_open=True, hint=" DeBERTa-v3 uses 50.")
        if head is not None:
            raise ValueError("DebertaV3Pretrainer has no head= option: its heads are the generator's masked-LM head "
                             "and the discriminator's ContextReplacedTokenHead.")

    @staticmethod
    def full_generator_config(backbone, generator_config):
        return deberta_generator_config_for(backbone, generator_config)

    @staticmethod
    def pretraining_parts(backbone, generator_config):
        """`(generator, rtd_head, discriminator)`: a `DebertaGenerator`, DeBERTa's replaced-token head, and the
        backbone run through `GradientDisentangledSharing` with the generator's token table."""
        generator = DebertaGenerator(generator_config, name="generator")
        rtd_head = ContextReplacedTokenHead(activation=backbone.activation,
                                            layer_norm_epsilon=backbone.layer_norm_epsilon,
                                            initializer_range=backbone.initializer_range,
                                            dtype=backbone.dtype_policy, name="rtd_head")
        sharing = GradientDisentangledSharing(backbone, generator.token_embedding, dtype=backbone.dtype_policy,
                                              name=SHARING_NAME)
        return generator, rtd_head, sharing

    # === Checkpoints and presets ===

    @classmethod
    def from_preset(cls, preset, generator_preset=None, load_weights=True, allow_pickle=False,
                    backbone_overrides=None, **task_args):
        """The discriminator of `preset` (a DeBERTa-v2/v3 HF folder, or a preset saved by this class, which
        also holds the generator) and, from `generator_preset` (an HF `DebertaV2ForMaskedLM` folder), the
        generator. Other arguments are `Task.from_preset`'s.

        Examples:
            >>> deberta = DebertaV3Pretrainer.from_preset("deberta-v3-small", generator_preset="my_generator")
        """
        discriminator = load_checkpoint(preset, load_weights=False)
        generator = load_checkpoint(generator_preset, load_weights, allow_pickle) if generator_preset else None
        for source, checkpoint in ((preset, discriminator), (generator_preset, generator)):
            if checkpoint is not None and checkpoint.family != "deberta-v2":
                raise ValueError(f"{source} holds a {checkpoint.family or 'bert'!r} model; DebertaV3Pretrainer "
                                 "reads DeBERTa-v2/v3 folders (model_type 'deberta-v2').")
        if generator is not None:
            if "generator_config" in task_args:
                raise ValueError("Give generator_preset (its config and weights) or generator_config, not both.")
            task_args["generator_config"] = {name: generator.backbone_config[name] for name in GENERATOR_SETTINGS
                                             if name in generator.backbone_config}
        task = super(ElectraPretrainer, cls).from_preset(preset, load_weights=load_weights, allow_pickle=allow_pickle,
                                                         backbone_overrides=backbone_overrides, **task_args)
        if generator is not None and generator.state_dict is not None:
            task.load_generator(generator.state_dict, generator.source)
        return task

    def heads_from_checkpoint(self, checkpoint):
        """Load the replaced-token head (`mask_predictions.*`, warning when a checkpoint with weights has none)
        and, from a preset saved by this class, the generator."""
        weights = checkpoint.heads(f"{RTD_HEAD}.")
        if weights:
            assign_links(rtd_head_links(self.rtd_head), weights, checkpoint.source)
        elif checkpoint.state_dict is not None or checkpoint.keras_weights_path is not None:
            warnings.warn(f"{checkpoint.source} has no replaced-token head ({RTD_HEAD}.*): it starts untrained.",
                          stacklevel=3)
        generator = {name[len(self.generator_prefix):]: value
                     for name, value in checkpoint.heads(self.generator_prefix).items()}
        if generator:
            self.load_generator(generator, checkpoint.source)

    def load_generator(self, state_dict, source):
        """Load HF `DebertaV2ForMaskedLM` weights (names without `deberta.`) into the generator, then restart
        the sharing so that the discriminator reads its own table."""
        assign_links(weight_links(self.generator.backbone), state_dict, source)
        names = masked_lm_head_names(self.generator.family)
        if not any(name.startswith(names.prefix) for name in state_dict):
            names = names.alternative
        assign_links(masked_lm_head_links(self.generator.mlm_head, self.generator.family, names), state_dict, source)
        self.embedding_sharing.restart_from_backbone()

    def head_weights(self):
        """The replaced-token head (`mask_predictions.*`) and the generator (`generator.` + HF
        `DebertaV2ForMaskedLM` names)."""
        weights = export_links(rtd_head_links(self.rtd_head))
        generator = generator_weights(self.generator)
        weights.update({self.generator_prefix + name: value for name, value in generator.items()})
        return weights

    def save_to_preset(self, folder):
        """`ElectraPretrainer.save_to_preset`, the discriminator's table written as `E_G + delta` first."""
        self.embedding_sharing.fold()
        return super().save_to_preset(folder)

    # === Training ===

    def fit(self, *args, **kwargs):
        """`ElectraPretrainer.fit`; the discriminator's own token table is not trained by gradient meanwhile (it
        reads `E_G + delta`), nor is its pooler (unread), and the table holds `E_G + delta` afterwards."""
        with self.training_scope():
            return super().fit(*args, **kwargs)

    @contextlib.contextmanager
    def training_scope(self):
        """What `fit` trains in (for a loop of your own, e.g. `train_on_batch`): the discriminator's own token
        table and its pooler (which pre-training does not read) out of the trainable variables, the table written
        as `E_G + delta` at the end."""
        with self.embedding_sharing.while_training(), left_untrained(self.backbone.pooler):
            yield


@contextlib.contextmanager
def left_untrained(layer):
    """`layer` out of the trainable variables meanwhile (pre-training does not read the discriminator's pooler:
    it belongs to the sequence classifiers), then as it was."""
    trainable = layer.trainable
    layer.trainable = False
    try:
        yield
    finally:
        layer.trainable = trainable


def rtd_head_links(head):
    """`(variable, hf_names, kind)` of a `ContextReplacedTokenHead` (`mask_predictions.*`)."""
    yield from norm_links(head.layer_norm, f"{RTD_HEAD}.LayerNorm")
    yield from dense_links(head.dense, f"{RTD_HEAD}.dense")
    yield from dense_links(head.classifier, f"{RTD_HEAD}.classifier")
