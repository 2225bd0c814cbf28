"""DebertaGenerator: DeBERTa-v3's generator, a shallower DeBERTa masked LM whose token table the discriminator
shares through gradient-disentangled embedding sharing."""

import keras

from kerasbert.families.checkpoint_weights import export_links, masked_lm_head_links, weight_links
from kerasbert.families.deberta_v2.deberta_v2_backbone import DebertaV2Backbone
from kerasbert.families.electra.electra_generator import GENERATOR_INPUTS
from kerasbert.families.family_heads import masked_lm_sequence
from kerasbert.layers.heads import MaskedLMHead
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS

# Settings the generator must share with its discriminator: GDES adds the two token tables.
SHARED_SETTINGS = ("vocabulary_size", "hidden_dim")
GENERATOR_SETTINGS = tuple(name for name in DebertaV2Backbone.config_names if not name.startswith("output_"))


def deberta_generator_config_for(backbone, generator_config=None):
    """The generator's `DebertaV2Backbone` config for a DeBERTa discriminator `backbone`: the discriminator's
    with half its layers (DeBERTa-v3's generator: same width, half the depth), then `generator_config`'s
    values; a ValueError for an unknown setting or a vocabulary or width other than the discriminator's.

    Examples:
        >>> deberta_generator_config_for(DebertaV2Backbone(num_layers=12))["num_layers"]
        6
    """
    config = {name: getattr(backbone, name) for name in GENERATOR_SETTINGS}
    config["num_layers"] = max(1, backbone.num_layers // 2)
    if generator_config is None:
        return config
    if not isinstance(generator_config, dict):
        raise TypeError(f"generator_config must be a dict of DebertaV2Backbone settings, got "
                        f"{type(generator_config).__name__}.")
    unknown = sorted(set(generator_config) - set(GENERATOR_SETTINGS))
    if unknown:
        raise ValueError(f"generator_config: unknown {unknown}; it takes DebertaV2Backbone settings "
                         f"{list(GENERATOR_SETTINGS)} (e.g. {{'num_layers': 6}}).")
    differing = [f"{name} {generator_config[name]} vs {config[name]}" for name in SHARED_SETTINGS
                 if name in generator_config and generator_config[name] != config[name]]
    if differing:
        raise ValueError(f"generator_config: {', '.join(differing)} (generator vs discriminator). The generator "
                         "shares the discriminator's token table (gradient-disentangled sharing adds the two), so "
                         "its vocabulary and width are the discriminator's.")
    return {**config, **generator_config}


@keras.saving.register_keras_serializable(package="kerasbert")
class DebertaGenerator(keras.Model):
    """DeBERTa-v3's generator (He et al., 2023): a `DebertaV2Backbone` of its own (`backbone`, by default half
    the discriminator's layers) and HF `DebertaV2ForMaskedLM`'s head (`mlm_head`, tied to its token table).

    Inputs: `token_ids`, `segment_ids`, `padding_mask` `[batch, T]` and `mask_positions` `[batch, P]`; output:
    float32 `[batch, P, vocabulary]` logits. Its weights are HF `DebertaV2ForMaskedLM`'s (`generator_weights`).

    Args:
        backbone_config: `DebertaV2Backbone` arguments (`deberta_generator_config_for` gives DeBERTa-v3's).

    Examples:
        >>> generator = DebertaGenerator(deberta_generator_config_for(discriminator))
        >>> logits = generator({"token_ids": ids, "segment_ids": segments, "padding_mask": mask,
        ...                     "mask_positions": positions})
    """

    family = "deberta-v2"

    def __init__(self, backbone_config, **kwargs):
        backbone = DebertaV2Backbone(**backbone_config, name="backbone")
        backbone.pooler.trainable = False  # HF's masked LM has no pooler: nothing reads it
        mlm_head = MaskedLMHead(  # HF DebertaV2ForMaskedLM's: dense, hidden_act, LayerNorm, tied decoder, bias
            backbone.vocabulary_size, token_embedding=backbone.token_embedding, activation=backbone.activation,
            layer_norm_epsilon=backbone.layer_norm_epsilon, initializer_range=backbone.initializer_range,
            dtype=backbone.dtype_policy, name="mlm_head")
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in GENERATOR_INPUTS}
        sequence = masked_lm_sequence(backbone({name: inputs[name] for name in PACKED_INPUTS}))
        super().__init__(inputs=inputs, outputs=mlm_head(sequence, inputs["mask_positions"]), **kwargs)
        self.backbone_config = dict(backbone_config)
        self.backbone = backbone
        self.mlm_head = mlm_head

    @property
    def token_embedding(self):
        """The generator's token `Embedding` (the table the discriminator shares)."""
        return self.backbone.token_embedding

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "backbone_config": self.backbone_config}


def generator_weights(generator):
    """The generator's weights under HF `DebertaV2ForMaskedLM` names, the base model's `deberta.` left out."""
    weights = export_links(weight_links(generator.backbone))
    weights.update(export_links(masked_lm_head_links(generator.mlm_head, generator.family)))
    return weights

