"""ElectraPretrainer: ELECTRA pre-training (Clark et al., 2020), replaced-token detection with a small
generator, from raw documents."""

import warnings

import keras
import tensorflow as tf
from keras import ops

from kerasbert.arguments import check_number
from kerasbert.data.masking_config import MaskingConfig
from kerasbert.data.pretraining_shards import is_shard_folder
from kerasbert.deployment.model_function import ModelFunction
from kerasbert.families.checkpoint_weights import export_links
from kerasbert.families.electra.electra_generator import GENERATOR_INPUTS, ElectraGenerator, generator_config_for
from kerasbert.families.electra.electra_weights import (
    GENERATOR_ARGUMENTS,
    generator_config_from_checkpoint,
    generator_links,
    load_generator,
    load_replaced_token_head,
    replaced_token_head_links,
)
from kerasbert.layers.heads import ReplacedTokenHead
from kerasbert.layers.replacement_sampler import ReplacementSampler
from kerasbert.presets.loading import load_checkpoint
from kerasbert.tasks.bert_pretrainer import BertPretrainer
from kerasbert.tasks.columns import reads_columns
from kerasbert.tasks.masked_lm_common import DOCUMENTS_HINT, check_keras_data, check_options, is_documents
from kerasbert.tasks.run_arguments import DEFAULT_BATCH_SIZE
from kerasbert.tasks.task import Task
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS

ELECTRA_MASKING = MaskingConfig(mask_token_rate=0.85, random_token_rate=0.0)  # ELECTRA's: 85% [MASK], 15% kept
RTD_WEIGHT = 50.0  # the paper's lambda: the discriminator's loss counts 50 times the generator's
INPUTS = (*PACKED_INPUTS, "mask_positions", "mask_ids", "mask_weights", "sampling_uniforms")
FLOAT_INPUTS = ("mask_weights", "sampling_uniforms")
GENERATOR_PREFIX = "generator."  # the generator's HF ElectraForMaskedLM names in a kerasbert preset's heads
METRIC_SUMS = ("mlm_loss", "mlm_hits", "mlm_weight", "rtd_loss", "rtd_hits", "rtd_weight")


@keras.saving.register_keras_serializable(package="kerasbert")
class ElectraPretrainer(BertPretrainer):
    """ELECTRA pre-training: a small generator fills in masked tokens, the discriminator (`backbone`) tells
    every token whether the generator replaced it; trained on raw documents.

    A step: mask `masking.selection_rate` of the tokens (`MaskedLMMasker`; ELECTRA's 85% `[MASK]`, 15% kept by
    default); the `ElectraGenerator` (`generator_config`, default `generator_config_for(backbone)`: 1/4 of the
    width) predicts them (masked-LM cross-entropy at the real masked positions); a token is sampled from its
    softmax at each masked position (`ReplacementSampler`, no gradient through the sample) and written into
    the original sequence; the discriminator reads that sequence and the `ReplacedTokenHead` gives one logit per
    token, trained with the sigmoid cross-entropy against "replaced" (sample != original) averaged over the
    real tokens. Loss = generator loss + `rtd_weight` (50) x discriminator loss.

    The generator shares the discriminator's embedding layer (token, segment and position tables and their
    LayerNorm), as in ELECTRA's code and paper (tied embeddings trained better than untied ones there);
    HF keeps `ElectraForMaskedLM` and `ElectraForPreTraining` as two models whose embeddings its pre-training
    script does not tie, so to reproduce a step in HF, share the embedding module between the two.

    Data: documents as `BertPretrainer` reads them (examples of single segments, no next-sentence task; masks
    drawn anew each epoch or once, `masking.dynamic`). The sampling takes one uniform number per masked position from
    the data (`sampling_uniforms`, seeded like the masks), so a step is reproducible and its replacements can
    be given. Keras-level data is a dict of `token_ids`, `segment_ids`, `padding_mask` (the masked sequence),
    `mask_positions`, `mask_ids` (the original ids there), `mask_weights` and `sampling_uniforms`
    (`pretraining_dataset` builds it). Outputs: `mlm` generator logits `[batch, P, vocabulary]`, `rtd`
    discriminator logits `[batch, T]`, `replaced` (the labels, `[batch, T]`) and `sampled_ids` `[batch, P]`.
    `fit` and Keras `evaluate` report `loss`, `mlm_loss`, `mlm_accuracy`, `rtd_loss`, `rtd_accuracy`;
    `evaluate(documents)` the same over a corpus (static masks and draws from `seed`).

    `save_to_preset(folder)` writes the discriminator (`BertClassifier.from_preset(folder)` fine-tunes it), its
    head and the generator; `from_preset` reads such a folder, or HF folders: an `ElectraForPreTraining`
    discriminator (`preset`) and an `ElectraForMaskedLM` generator (`generator_preset`; without one the
    generator starts fresh).

    Args:
        backbone: an `ElectraBackbone` (the discriminator). preprocessor: a `BertPreprocessor`.
        generator_config: `ElectraGenerator` arguments (`num_layers`, `num_heads`, `hidden_dim`,
            `intermediate_dim`, and optionally `activation`, `dropout`, `attention_dropout`,
            `layer_norm_epsilon`, `initializer_range`); None: `generator_config_for(backbone)`.
        rtd_weight: the discriminator loss's weight (ELECTRA's lambda, 50).
        max_sequence_length, short_seq_prob, dupe_factor, columns: as in `BertPretrainer`.
        masking: a `MaskingConfig`, as in `BertPretrainer`; default ELECTRA's (85% `[MASK]`, no random tokens).

    Examples:
        >>> backbone = ElectraBackbone.from_preset("electra_small_discriminator", load_weights=False)
        >>> electra = ElectraPretrainer(backbone, BertPreprocessor(BertTokenizer.from_preset("bert_mini_en_uncased")))
        >>> electra.fit(chapters, epochs=1, batch_size=32, learning_rate=5e-4)
        >>> electra.save_to_preset("austen_electra")   # then BertClassifier.from_preset("austen_electra", ...)
    """

    span_boundary_objective = False  # BertPretrainer's data path reads it; ELECTRA has no SBO head

    def __init__(
        self,
        backbone,
        preprocessor,
        generator_config=None,
        rtd_weight=RTD_WEIGHT,
        max_sequence_length=128,
        short_seq_prob=0.1,
        dupe_factor=1,
        masking=None,
        **kwargs,
    ):
        self.check_pretraining_options(backbone, generator_config, rtd_weight, kwargs.get("head"))
        check_options(backbone, None, max_sequence_length)
        masking = MaskingConfig.coerce(masking, self.default_masking)
        generator_config = self.full_generator_config(backbone, generator_config)

        # === Layers ===
        generator, rtd_head, discriminator = self.pretraining_parts(backbone, generator_config)
        sampler = ReplacementSampler(name="replacement_sampler")

        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="float32" if name in FLOAT_INPUTS else "int32", name=name)
                  for name in INPUTS}
        mlm_logits = generator({name: inputs[name] for name in GENERATOR_INPUTS})
        corruption = sampler(mlm_logits, *(inputs[name] for name in ("token_ids", "mask_positions", "mask_ids",
                                                                     "mask_weights", "sampling_uniforms")))
        discriminated = discriminator({"token_ids": corruption["corrupted_ids"], "segment_ids": inputs["segment_ids"],
                                  "padding_mask": inputs["padding_mask"]})
        outputs = {"mlm": mlm_logits, "rtd": rtd_head(discriminated["sequence_output"]),
                   "replaced": corruption["replaced"], "sampled_ids": corruption["sampled_ids"]}
        # Not BertPretrainer.__init__: that builds BERT's heads. The data and masking options are the same.
        Task.__init__(self, inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor, **kwargs)

        # === Config ===
        self.generator_config = generator_config
        self.rtd_weight = rtd_weight
        self.next_sentence = None  # ELECTRA's examples: single segments (read by BertPretrainer's data)
        self.max_sequence_length = max_sequence_length
        self.short_seq_prob = short_seq_prob
        self.dupe_factor = dupe_factor
        self.masking = masking
        self.generator = generator
        self.rtd_head = rtd_head
        self.mlm_loss_tracker = keras.metrics.Mean(name="mlm_loss")
        self.mlm_accuracy = keras.metrics.SparseCategoricalAccuracy(name="mlm_accuracy")
        self.rtd_loss_tracker = keras.metrics.Mean(name="rtd_loss")
        self.rtd_accuracy = keras.metrics.BinaryAccuracy(name="rtd_accuracy", threshold=0.0)  # on logits
        self.metric_sums_function = ModelFunction(self, self.metric_sums)
        if self.tokenizer.has_vocabulary:  # (from a `.keras` file it comes later, options checked at save)
            self.masker(seed=0)  # checks the masking options now rather than at the first fit

    # === The parts a subclass changes (DebertaV3Pretrainer) ===

    default_masking = ELECTRA_MASKING
    generator_prefix = GENERATOR_PREFIX  # the generator's weights in a kerasbert preset's heads

    @staticmethod
    def check_pretraining_options(backbone, generator_config, rtd_weight, head):
        """Errors for options this pre-trainer cannot take, before any layer is built."""
        check_electra_options(backbone, generator_config, rtd_weight, head)

    @staticmethod
    def full_generator_config(backbone, generator_config):
        """The generator's arguments: `generator_config`, or ELECTRA's for `backbone`."""
        return dict(generator_config or generator_config_for(backbone))

    @staticmethod
    def pretraining_parts(backbone, generator_config):
        """`(generator, rtd_head, discriminator)`: ELECTRA's generator on the discriminator's embedding layer, its
        `ReplacedTokenHead`, and the backbone itself as what reads the corrupted sequence."""
        generator = ElectraGenerator(backbone.embedding, **generator_config, name="generator")
        rtd_head = ReplacedTokenHead(activation=backbone.activation, initializer_range=backbone.initializer_range,
                                     dtype=backbone.dtype_policy, name="rtd_head")
        return generator, rtd_head, backbone

    # === Checkpoints and presets ===

    @classmethod
    def from_preset(cls, preset, generator_preset=None, load_weights=True, allow_pickle=False,
                    backbone_overrides=None, **task_args):
        """The discriminator of `preset` (an ELECTRA checkpoint: HF `ElectraForPreTraining` / `ElectraModel`
        folder, `electra_small_discriminator`, or a preset saved by this class, which also holds the generator)
        and, from `generator_preset` (an HF `ElectraForMaskedLM` folder), the generator. Other arguments are
        `Task.from_preset`'s. Checkpoints of another family, or a generator whose embeddings cannot be the
        discriminator's, are errors before any model is built.

        Examples:
            >>> electra = ElectraPretrainer.from_preset("electra-small-discriminator",
            ...                                         generator_preset="electra-small-generator")
        """
        discriminator = load_checkpoint(preset, load_weights=False)
        if discriminator.family != "electra":
            raise ValueError(
                f"{preset} holds a {discriminator.family or 'bert'!r} model; ElectraPretrainer trains an ELECTRA "
                "discriminator (an HF ElectraForPreTraining or ElectraModel folder, electra_small_discriminator, or "
                "a preset saved by ElectraPretrainer). For masked-LM pre-training of other models use BertPretrainer."
            )
        generator = None
        if generator_preset is not None:
            if "generator_config" in task_args:
                raise ValueError("Give generator_preset (its config and weights) or generator_config, not both.")
            generator = load_checkpoint(generator_preset, load_weights, allow_pickle)
            task_args["generator_config"] = generator_config_from_checkpoint(
                generator, {**discriminator.backbone_config, **(backbone_overrides or {})})
        task = super().from_preset(preset, load_weights=load_weights, allow_pickle=allow_pickle,
                                   backbone_overrides=backbone_overrides, **task_args)
        if generator is not None and generator.state_dict is not None:
            load_generator(task.generator, generator.state_dict, generator.source,
                           task.backbone.token_embedding.embeddings.numpy())
        return task

    def heads_from_checkpoint(self, checkpoint):
        """Load the discriminator head (`discriminator_predictions.*`) and, from a preset saved by this class,
        the generator; warn when a checkpoint with weights has no discriminator head."""
        has_weights = checkpoint.state_dict is not None or checkpoint.keras_weights_path is not None
        if not load_replaced_token_head(self.rtd_head, checkpoint) and has_weights:
            warnings.warn(f"{checkpoint.source} has no discriminator head (discriminator_predictions.*): the "
                          "replaced-token head starts untrained.", stacklevel=3)
        generator_weights = {name[len(GENERATOR_PREFIX):]: value
                             for name, value in checkpoint.heads(GENERATOR_PREFIX).items()}
        if generator_weights:
            load_generator(self.generator, generator_weights, checkpoint.source)

    def head_weights(self):
        """The discriminator head (`discriminator_predictions.*`) and the generator (`generator.` + its HF
        `ElectraForMaskedLM` names, embeddings excepted: they are the discriminator's)."""
        weights = export_links(replaced_token_head_links(self.rtd_head))
        weights.update({GENERATOR_PREFIX + name: value
                        for name, value in export_links(generator_links(self.generator)).items()})
        return weights

    # === Data ===

    def pretraining_dataset(self, documents, batch_size=DEFAULT_BATCH_SIZE, seed=0, dynamic=None, shuffle=False,
                            group_by_length=False, fit_role=None, start=0):
        """Documents -> a `tf.data.Dataset` of input dicts (see the class docstring), as
        `BertPretrainer.pretraining_dataset` (same arguments) plus `sampling_uniforms` drawn with `seed`.

        Examples:
            >>> sorted(next(iter(electra.pretraining_dataset(chapters))))
            ['mask_ids', 'mask_positions', 'mask_weights', 'padding_mask', 'sampling_uniforms', 'segment_ids', 'token_ids']
        """
        batches = super().pretraining_dataset(documents, batch_size, seed, dynamic, shuffle, group_by_length,
                                              fit_role, start)
        if is_shard_folder(documents):  # a stream: batch n's draws from (seed, n), so a resumed run draws the same
            def seed_of(number):
                return tf.stack([tf.constant(seed, tf.int64), tf.constant(1 << 40, tf.int64) + number])

            batches = batches.enumerate(start=start).map(lambda number, batch: (seed_of(number), *batch))
        else:
            with tf.device("/CPU:0"):  # where tf.data runs
                draws = tf.random.Generator.from_seed(seed).split(1)[0]  # a stream of its own, not the masker's
            batches = batches.map(lambda *batch: (draws.make_seeds(1)[:, 0], *batch))

        def electra_inputs(draw_seed, inputs, targets, weights):
            uniforms = tf.random.stateless_uniform(tf.shape(targets["mlm"]), draw_seed)
            return {**inputs, "mask_ids": targets["mlm"], "mask_weights": weights["mlm"],
                    "sampling_uniforms": uniforms}

        return batches.map(electra_inputs).prefetch(tf.data.AUTOTUNE)

    # === Training ===

    def default_loss(self):
        return None  # `compute_loss` is ELECTRA's

    def default_metrics(self):
        return None  # the trackers of `compute_loss` and `compute_metrics`

    def default_weighted_metrics(self):
        return None

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Generator cross-entropy (mean over the real masked positions) + `rtd_weight` x discriminator sigmoid
        cross-entropy (mean over the real tokens), as HF `ElectraForMaskedLM` and `ElectraForPreTraining` compute
        them; whatever `compile(loss=...)` says is not used."""
        sums = token_loss_sums(x, y_pred)
        mlm_loss = ops.divide_no_nan(sums["mlm_loss"], sums["mlm_weight"])
        rtd_loss = ops.divide_no_nan(sums["rtd_loss"], sums["rtd_weight"])
        self.mlm_loss_tracker.update_state(mlm_loss, sample_weight=sums["mlm_weight"])
        self.rtd_loss_tracker.update_state(rtd_loss, sample_weight=sums["rtd_weight"])
        total = mlm_loss + self.rtd_weight * rtd_loss
        for loss in self.losses:  # layers' own losses (regularisers), as Keras adds them
            total = total + ops.sum(loss)
        return total

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        self.mlm_accuracy.update_state(x["mask_ids"], y_pred["mlm"], sample_weight=x["mask_weights"])
        self.rtd_accuracy.update_state(y_pred["replaced"], y_pred["rtd"], sample_weight=x["padding_mask"])
        return self.get_metrics_result()

    @reads_columns
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", seed=0, **kwargs):
        """On documents: a dict of corpus-level `loss` (= `mlm_loss` + `rtd_weight` x `rtd_loss`), `mlm_loss`,
        `mlm_accuracy` (the generator's), `rtd_loss`, `rtd_accuracy` (the discriminator's, over the real tokens)
        and `replaced_fraction`, with static masks and draws from `seed`. Keras-level data goes to Keras
        `evaluate`.

        Examples:
            >>> electra.evaluate(held_out_chapters)["rtd_accuracy"]
        """
        if not is_documents(x):
            check_keras_data(x, DOCUMENTS_HINT, "evaluate")
            return Task.evaluate(self, x, y, batch_size=batch_size, verbose=verbose, **kwargs)
        if y is not None or kwargs:
            raise TypeError(f"evaluate on documents takes batch_size, verbose and seed; got "
                            f"{sorted(kwargs) + (['y'] if y is not None else [])}.")
        dataset = self.pretraining_dataset(x, batch_size or DEFAULT_BATCH_SIZE, seed, dynamic=False)
        progress = keras.utils.Progbar(int(dataset.cardinality()), verbose=1 if verbose == "auto" else verbose)
        totals = dict.fromkeys(METRIC_SUMS + ("replaced",), 0.0)
        for step, batch in enumerate(dataset):
            for name, value in self.metric_sums_function(batch).items():
                totals[name] += float(value)
            progress.update(step + 1)
        results = {"mlm_loss": totals["mlm_loss"] / max(totals["mlm_weight"], 1.0),
                   "mlm_accuracy": totals["mlm_hits"] / max(totals["mlm_weight"], 1.0),
                   "rtd_loss": totals["rtd_loss"] / max(totals["rtd_weight"], 1.0),
                   "rtd_accuracy": totals["rtd_hits"] / max(totals["rtd_weight"], 1.0),
                   "replaced_fraction": totals["replaced"] / max(totals["rtd_weight"], 1.0)}
        return {"loss": results["mlm_loss"] + self.rtd_weight * results["rtd_loss"], **results}

    def metric_sums(self, inputs):
        """One batch's sums (losses, hits, weights) for corpus-level metrics, and of the replaced tokens."""
        outputs = self(inputs, training=False)
        sums = token_loss_sums(inputs, outputs)
        mask_ids = ops.cast(inputs["mask_ids"], "int32")
        mlm_hits = ops.cast(ops.equal(ops.argmax(outputs["mlm"], axis=-1), mask_ids), "float32")
        rtd_hits = ops.cast(ops.equal(ops.cast(outputs["rtd"] > 0, "float32"), outputs["replaced"]), "float32")
        real = ops.cast(inputs["padding_mask"], "float32")
        return {**sums, "mlm_hits": ops.sum(mlm_hits * ops.cast(inputs["mask_weights"], "float32")),
                "rtd_hits": ops.sum(rtd_hits * real), "replaced": ops.sum(outputs["replaced"] * real)}

    # === Serialisation ===

    def pretraining_options(self):
        """The constructor arguments other than the backbone and preprocessor."""
        options = {name: value for name, value in super().pretraining_options().items() if name != "next_sentence"}
        return {"generator_config": dict(self.generator_config), "rtd_weight": self.rtd_weight, **options}


def token_loss_sums(inputs, outputs):
    """Summed generator cross-entropy over the weighted masked positions (`mlm_loss`, `mlm_weight`) and
    discriminator sigmoid cross-entropy over the real tokens (`rtd_loss`, `rtd_weight`) of one batch."""
    mlm_weights = ops.cast(inputs["mask_weights"], "float32")
    real = ops.cast(inputs["padding_mask"], "float32")
    mlm_losses = ops.sparse_categorical_crossentropy(inputs["mask_ids"], outputs["mlm"], from_logits=True)
    rtd_losses = ops.binary_crossentropy(outputs["replaced"], outputs["rtd"], from_logits=True)
    return {"mlm_loss": ops.sum(mlm_losses * mlm_weights), "mlm_weight": ops.sum(mlm_weights),
            "rtd_loss": ops.sum(rtd_losses * real), "rtd_weight": ops.sum(real)}


def check_electra_options(backbone, generator_config, rtd_weight, head):
    """Errors for a discriminator of another family, an unknown generator argument, a bad `rtd_weight` or a
    `head`, before any layer is built."""
    if getattr(backbone, "family", None) != "electra":
        raise TypeError(
            f"ElectraPretrainer trains an ElectraBackbone (the discriminator); got {type(backbone).__name__}. Build "
            "one with ElectraBackbone(...), e.g. ElectraBackbone.from_preset('electra_small_discriminator', "
            "load_weights=False)."
        )
    if generator_config is not None:
        if not isinstance(generator_config, dict):
            raise TypeError(f"generator_config must be a dict of ElectraGenerator arguments, got "
                            f"{type(generator_config).__name__}.")
        unknown = sorted(set(generator_config) - set(GENERATOR_ARGUMENTS))
        missing = [name for name in GENERATOR_ARGUMENTS[:4] if name not in generator_config]
        if unknown or missing:
            raise ValueError(f"generator_config: unknown {unknown}, missing {missing}; it takes "
                             f"{list(GENERATOR_ARGUMENTS)} (the first four are required).")
    check_number("rtd_weight", rtd_weight, 0, low_open=True, hint=" ELECTRA uses 50.")
    if head is not None:
        raise ValueError("ElectraPretrainer has no head= option: its heads are the generator's masked-LM head and "
                         "the discriminator's ReplacedTokenHead.")
