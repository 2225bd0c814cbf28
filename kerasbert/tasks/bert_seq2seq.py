"""BertSeq2Seq: text generation with a BERT encoder, as UniLM (Dong et al. 2019, "Unified Language Model
Pre-training for Natural Language Understanding and Generation").

One Transformer reads `[CLS] source [SEP] target [SEP]` (segments 0 and 1) under UniLM's seq2seq attention
mask (`seq2seq_attention_mask`): source tokens see the source, target tokens the source and the target up to
themselves, nothing sees padding. Training masks target tokens (`kerasbert.data.seq2seq_masking`) and
predicts them with the masked-LM head tied to the token embeddings, which starts from the checkpoint's
`cls.predictions` head when it has one. Generation writes a `[MASK]` after the text so far and predicts it
(`kerasbert.generation.seq2seq_decoding`: greedy or beam search, with a key/value cache).
"""


import keras
import numpy as np
import pandas as pd
import tensorflow as tf
from keras import ops

from kerasbert.arguments import check_count, check_number
from kerasbert.data.batching import EagerBatches, make_batched_dataset
from kerasbert.data.masking import is_bracketed
from kerasbert.data.output_rows import ragged_from_padded
from kerasbert.data.prepared import Prepared
from kerasbert.data.seq2seq_masking import UNILM_MASK_PROBABILITY, TargetMasker
from kerasbert.data.validation import require_columns, to_dataframe, validate_text_columns
from kerasbert.deployment.model_function import ModelFunction
from kerasbert.families.albert.block_sharing import block_order
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.sequence_length import longest_input
from kerasbert.generation.seq2seq_decoding import DecodingFunction, DecodingSteps, beam_search, greedy_search
from kerasbert.tasks.columns import column_argument, reads_columns
from kerasbert.tasks.masked_lm_common import build_masked_lm_head, load_masked_lm_head, masked_lm_inputs
from kerasbert.tasks.run_arguments import DEFAULT_BATCH_SIZE, check_run_arguments, is_raw
from kerasbert.tasks.task import Task

NOT_GENERATED = -1e9  # the logit of the special tokens generation never writes ([PAD], [CLS], [MASK], ...)


class TargetTooLongError(ValueError):
    """A training target has more tokens than the model's `max_target_length`."""


def seq2seq_attention_mask(segment_ids, padding_mask):
    """UniLM's seq2seq self-attention mask, bool `[batch, T, T]`: query i may see key j when j is a real
    token and either in the source (segment 0) or not after i. So the source is read bidirectionally and
    never sees the target; the target sees the source and itself left to right.

    Examples:
        >>> seq2seq_attention_mask(ops.array([[0, 0, 1, 1]]), ops.array([[1, 1, 1, 1]]))[0].tolist()
        [[True, True, False, False], [True, True, False, False], [True, True, True, False], [True, True, True, True]]
    """
    positions = ops.cumsum(ops.ones_like(segment_ids, "int32"), axis=1)
    not_after = positions[:, None, :] <= positions[:, :, None]
    source_key = ops.equal(segment_ids, 0)[:, None, :]
    real_key = ops.cast(padding_mask, "bool")[:, None, :]
    return ops.logical_and(real_key, ops.logical_or(source_key, not_after))


def applied_blocks(backbone):
    """The encoder blocks `backbone` applies, in order (ALBERT's shared blocks once per layer)."""
    order = block_order(backbone.num_layers, backbone.num_block_groups, backbone.blocks_per_group)
    return [backbone.encoder_blocks[i] for i in order]


def embed(backbone, token_ids, segment_ids, training=None):
    """The backbone's embedding output (projected to `hidden_dim` when it factorises its embeddings)."""
    x = backbone.embedding(token_ids, segment_ids, training=training)
    return x if backbone.embedding_projection is None else backbone.embedding_projection(x)


def finish(backbone, x):
    """The backbone's last step after its blocks: the final LayerNorm of a pre-LN encoder."""
    return x if backbone.final_layer_norm is None else backbone.final_layer_norm(x)


def seq2seq_sequence_output(backbone, token_ids, segment_ids, attention_mask):
    """The backbone's `sequence_output` under a full `[batch, T, T]` `attention_mask`: its own layers,
    called with the mask that its functional graph (padding masks only) has no input for."""
    x = embed(backbone, token_ids, segment_ids)
    for block in applied_blocks(backbone):
        x = block(x, attention_mask=attention_mask)
    return finish(backbone, x)


@keras.saving.register_keras_serializable(package="kerasbert")
class BertSeq2Seq(Task):
    """Sequence-to-sequence generation on a BERT backbone, UniLM's way (see the module docstring).

    `fit(df)` trains on a DataFrame with a source and a target column: each epoch masks a new
    `mask_probability` of every target (its final `[SEP]` included; 80% `[MASK]`, 10% random, 10% kept) and
    the loss is the cross-entropy at the masked positions. A source longer than `max_source_length` tokens
    is truncated at its end (as every BERT task truncates); a target longer than `max_target_length` is a
    `TargetTooLongError` before anything runs. `evaluate(df)` gives that loss, its token accuracy and
    perplexity on targets masked with a fixed `seed`. `generate(texts)` / `predict(texts)` write targets.

    Model inputs are the backbone's plus `mask_positions` (int32 `[batch, P]`); the output is
    `[batch, P, vocabulary]` logits. Keras-level data is `(inputs, mask_ids, mask_weights)`.

    `from_preset(preset, max_source_length=..., max_target_length=...)` loads the backbone, the tokenizer and
    the checkpoint's masked-LM head; a checkpoint without one (all_minilm_l6_v2_en) gives a fresh head and a
    warning, and `fit` trains it.

    Args:
        backbone: a `BertBackbone`. preprocessor: a `BertPreprocessor` (its tokenizer and packer are used)
            whose `sequence_length` holds `max_source_length + max_target_length + 3` tokens, or None.
        max_source_length: the most source tokens kept ([CLS] and [SEP] not counted).
        max_target_length: the most target tokens ([SEP] not counted), in training and by default in
            generation.
        mask_probability: the fraction of each target masked in training (UniLM: 0.7).
        columns: the DataFrame columns by role, "source" and "target" (the defaults).

    Examples:
        >>> writer = BertSeq2Seq.from_preset("all_minilm_l6_v2_en", max_source_length=64, max_target_length=24)
        >>> writer.fit(pd.DataFrame({"source": sentences, "target": questions}), epochs=2)
        >>> writer.generate(["the eiffel tower [SEP] The Eiffel Tower is in Paris."], beam_size=4)
        ['where is the eiffel tower?']
        >>> writer.save("questions.keras")   # keras.saving.load_model(...).generate(...) gives the same
    """

    config_names = ("max_source_length", "max_target_length", "mask_probability")
    default_columns = {"source": "source", "target": "target"}

    def __init__(self, backbone, preprocessor, max_source_length=128, max_target_length=48,
                 mask_probability=UNILM_MASK_PROBABILITY, head=None, **kwargs):
        check_options(backbone, preprocessor, max_source_length, max_target_length, mask_probability, head)

        # === Functional model ===
        inputs = masked_lm_inputs(backbone)
        attention_mask = seq2seq_attention_mask(inputs["segment_ids"], inputs["padding_mask"])
        sequence_output = seq2seq_sequence_output(backbone, inputs["token_ids"], inputs["segment_ids"],
                                                  attention_mask)
        mlm_head = build_masked_lm_head(backbone)
        outputs = mlm_head(sequence_output, inputs["mask_positions"])
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor, **kwargs)

        # === Config ===
        self.max_source_length = max_source_length
        self.max_target_length = max_target_length
        self.mask_probability = mask_probability
        self.mlm_head = mlm_head
        # Built once, as Keras builds `predict_function`: a new compiled function each call would retrace.
        self.prefill_function = DecodingFunction(self, self.prefill)
        self.cached_step_function = DecodingFunction(self, self.cached_step, static_argnums=(7,))
        self.uncached_step_function = DecodingFunction(self, self.uncached_step, static_argnums=(4,))
        self.metric_sums_function = ModelFunction(self, self.metric_sums)
        self.generation_bias = None  # made at the first generation (a loaded model gets its vocabulary late)

    # === Construction ===

    def heads_from_checkpoint(self, checkpoint):
        """Load the checkpoint's masked-LM head (`cls.predictions.*` in BERT), UniLM's starting point for the
        output layer; warn when a checkpoint with weights has none."""
        load_masked_lm_head(self.mlm_head, checkpoint, type(self).__name__, self.backbone.family,
                            untrained_effect="a fresh transform and bias (its decoder is the loaded token "
                                             "embedding): fit trains it with the rest.")

    # === Data ===

    def prepare(self, data, with_labels, training=False):
        source, target = self.columns["source"], self.columns["target"]
        frame = to_dataframe(data, text_column=source)
        if frame.empty and with_labels:
            raise ValueError("The data has no rows: give at least one source and target.")
        columns = {column_argument("source"): source}
        if with_labels:
            columns[column_argument("target")] = target
        require_columns(frame, columns)
        validate_text_columns(frame, columns)
        if frame.empty:
            return Prepared(frame=frame, features={})
        sources = self.tokenizer(frame[source].tolist())[:, :self.max_source_length]
        if not with_labels:
            return Prepared(frame=frame, features=ragged_from_padded(self.preprocessor.packer(sources)))
        targets = self.tokenizer(frame[target].tolist())
        self.check_target_lengths(frame, targets.row_lengths().numpy())
        features = ragged_from_padded(self.preprocessor.packer((sources, targets)))
        return Prepared(frame=frame, features=features, labels=features["token_ids"])

    def check_target_lengths(self, frame, lengths):
        """A `TargetTooLongError` naming the first target of more than `max_target_length` tokens."""
        too_long = np.flatnonzero(lengths > self.max_target_length)
        if too_long.size:
            first = too_long[0]
            text = frame[self.columns["target"]].iloc[first]
            raise TargetTooLongError(
                f"{too_long.size} target(s) in column {self.columns['target']!r} have more than max_target_length="
                f"{self.max_target_length} tokens; the first, row {frame.index[first]!r}, has {lengths[first]}: "
                f"{text[:60]!r}. Build the model with max_target_length={int(lengths.max())} (from_preset(..., "
                f"max_target_length=...)), or drop the long rows before fit."
            )

    def make_dataset(self, prepared, labels=None, **options):
        """The batches of `make_batched_dataset`; with labels (the packed ids), as `(inputs, mask_ids,
        mask_weights)` with target tokens masked anew each time a batch is read (`TargetMasker`, seeded
        with the batch order's seed)."""
        options.pop("sample_weight", None)
        dataset = make_batched_dataset(prepared.features, **options)
        seed = options["batch_order"].seed
        if labels is None:
            return dataset
        masker = TargetMasker.from_tokenizer(self.tokenizer, mask_probability=self.mask_probability,
                                             max_predictions=self.max_target_length + 1, seed=seed)
        return dataset.map(masker)  # sequential: the same seed gives the same masks

    # === Training and evaluation ===

    def default_loss(self):
        """Cross-entropy averaged over the weighted (real) masked positions only."""
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight")

    def default_weighted_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    @reads_columns
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", seed=0, **kwargs):
        """On a DataFrame of sources and targets: `loss` (mean cross-entropy of the masked target tokens),
        `accuracy` and `perplexity` (exp of the loss), with masks drawn from `seed`; Keras-level data goes to
        Keras `evaluate`.

        Examples:
            >>> writer.evaluate(test_df)   # {"loss": 2.9, "accuracy": 0.47, "perplexity": 18.2}
        """
        check_run_arguments(x, batch_size)
        if not is_raw(x):
            return super().evaluate(x, y, batch_size=batch_size, verbose=verbose, **kwargs)
        prepared = self.prepare(x, with_labels=True)
        dataset = self.batches(prepared, with_labels=True, batch_size=batch_size or DEFAULT_BATCH_SIZE, seed=seed,
                               order=self.length_order(prepared))
        totals = np.zeros(3)
        for batch in dataset:
            totals += np.array(self.metric_sums_function(*batch), np.float64)
        loss = float(totals[0] / totals[2])
        return {"loss": loss, "accuracy": float(totals[1] / totals[2]), "perplexity": float(np.exp(loss))}

    def metric_sums(self, inputs, mask_ids, mask_weights):
        """One batch's summed cross-entropy, hits and weight over the masked positions."""
        logits = self(inputs, training=False)
        losses = keras.losses.sparse_categorical_crossentropy(mask_ids, logits, from_logits=True)
        hits = ops.cast(ops.equal(ops.argmax(logits, axis=-1), ops.cast(mask_ids, "int32")), "float32")
        return ops.sum(losses * mask_weights), ops.sum(hits * mask_weights), ops.sum(mask_weights)

    # === Generation ===

    def generate(self, texts, max_length=None, beam_size=1, length_penalty=1.0, batch_size=None, use_cache=True,
                 no_repeat_ngram_size=0):
        """Targets written for source texts: one string for one text, else a list in input order.

        Greedy with `beam_size=1`, else beam search (`beam_search`: hypotheses scored by log-probability
        over length ** `length_penalty`); at most `max_length` tokens (default `max_target_length`).
        `no_repeat_ngram_size=n` never writes an n-gram twice in one target (HF's `no_repeat_ngram_size`, UniLM's
        `forbid_duplicate_ngrams`); 0 allows repeats.
        `use_cache=False` recomputes the whole sequence each step instead of keeping keys and values (same
        tokens, slower: see `seq2seq_decoding`). Sources are tokenised and truncated as in training.

        Examples:
            >>> writer.generate("the eiffel tower [SEP] The Eiffel Tower is in Paris.")
            'where is the eiffel tower?'
        """
        generated = self.generate_with_scores(texts, max_length, beam_size, length_penalty, batch_size, use_cache,
                                              no_repeat_ngram_size)
        return generated[0][0] if isinstance(texts, str) else [text for text, _ in generated]

    @reads_columns
    def predict(self, x, batch_size=None, verbose="auto", max_length=None, beam_size=1, length_penalty=1.0,
                use_cache=True, no_repeat_ngram_size=0, **kwargs):
        """A DataFrame with the source texts, the `generated` targets and their `score` (summed
        log-probability when greedy; the beam score with beams), indexed as the input; Keras-level data goes
        to Keras `predict` (the masked-LM logits). Arguments as `generate`.

        Examples:
            >>> writer.predict(test_df, beam_size=4)[["source", "generated"]]
        """
        check_run_arguments(x, batch_size)
        if not is_raw(x):
            return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        source = self.columns["source"]
        frame = to_dataframe(x, text_column=source)
        generated = self.generate_with_scores(frame, max_length, beam_size, length_penalty, batch_size, use_cache,
                                              no_repeat_ngram_size)
        columns = {source: frame[source] if len(frame) else [],
                   "generated": [text for text, _ in generated], "score": [score for _, score in generated]}
        return pd.DataFrame(columns, index=frame.index)

    def generate_with_scores(self, data, max_length, beam_size, length_penalty, batch_size, use_cache,
                             no_repeat_ngram_size):
        """`(text, score)` per source row of `data`, in order (see `generate` and `predict`)."""
        max_length = self.check_generation_options(max_length, beam_size, length_penalty, batch_size,
                                                   no_repeat_ngram_size)
        prepared = self.prepare(data, with_labels=False)
        if prepared.frame.empty:
            return []
        if self.generation_bias is None:
            self.generation_bias = generation_bias(self.tokenizer)
        order = self.length_order(prepared)
        batches = EagerBatches(prepared.features, order, batch_size or max(1, DEFAULT_BATCH_SIZE // beam_size),
                               max_length=self.sequence_length or longest_input(self.backbone),
                               pad_token_id=self.tokenizer.pad_token_id)
        found = []
        end = self.tokenizer.sep_token_id
        for batch in batches:
            token_ids, padding_mask = batch["token_ids"], batch["padding_mask"]
            top_k = (1 if beam_size == 1 else 2 * beam_size) + (max_length if no_repeat_ngram_size else 0)
            top_k = min(top_k, self.backbone.vocabulary_size)  # a row bans at most one candidate per step so far
            steps = DecodingSteps(self, token_ids, padding_mask, max_length, beam_size, top_k, use_cache)
            if beam_size == 1:
                found += greedy_search(steps, len(token_ids), max_length, end, no_repeat_ngram_size)
            else:
                found += beam_search(steps, len(token_ids), beam_size, max_length, end, length_penalty,
                                     no_repeat_ngram_size)
        ids = tf.RaggedTensor.from_row_lengths(np.array([t for tokens, _ in found for t in tokens], np.int32),
                                               [len(tokens) for tokens, _ in found])
        texts = self.tokenizer.detokenize(ids).numpy().tolist()
        results = [(text.decode("utf-8"), score) for text, (_, score) in zip(texts, found)]
        restored = [None] * len(results)
        for position, index in enumerate(order):
            restored[index] = results[position]
        return restored

    def check_generation_options(self, max_length, beam_size, length_penalty, batch_size, no_repeat_ngram_size):
        """`max_length` (its default filled in), or an error naming the option, before any computation."""
        room = longest_input(self.backbone) - self.max_source_length - 2  # [CLS] source [SEP] before the target
        max_length = self.max_target_length if max_length is None else check_count("max_length", max_length)
        if max_length > room:
            raise ValueError(f"max_length={max_length} does not fit the backbone's {longest_input(self.backbone)} "
                             f"positions after a source of up to {self.max_source_length} tokens: use "
                             f"max_length <= {room}.")
        check_count("beam_size", beam_size)
        if 2 * beam_size > self.backbone.vocabulary_size:
            raise ValueError(f"beam_size={beam_size} needs 2 * beam_size candidates a step from a vocabulary of "
                             f"{self.backbone.vocabulary_size}; use a smaller beam.")
        check_number("length_penalty", length_penalty, hint=" 1.0: mean log-probability per token; 0.0: their sum.")
        if batch_size is not None:
            check_count("batch_size", batch_size)
        check_count("no_repeat_ngram_size", no_repeat_ngram_size, 0, hint=" 0: repeats allowed; 3: no trigram twice.")
        return max_length

    def next_tokens(self, logits, top_k):
        """`(log-probabilities, ids)` of the `top_k` best tokens, each `[rows, top_k]`, from the `[rows,
        vocabulary]` logits of the `[MASK]` being predicted; special tokens other than `[SEP]` (the end) and
        `[UNK]` are never chosen."""
        logits = logits + ops.convert_to_tensor(self.generation_bias)
        return ops.top_k(ops.log_softmax(logits, axis=-1), top_k)

    def uncached_step(self, token_ids, segment_ids, padding_mask, positions, top_k):
        """One decoding step through the training graph on the whole sequences: the best tokens at
        `positions` (`[rows]`)."""
        inputs = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask,
                  "mask_positions": positions[:, None]}
        logits = self({name: ops.convert_to_tensor(value, "int32") for name, value in inputs.items()}, training=False)
        return self.next_tokens(logits[:, 0], top_k)

    def prefill(self, token_ids, attention_mask):
        """Every layer's key/value cache (`[rows, 2, heads, slots, head_dim]`, one per block applied) after
        the source `token_ids` (`[rows, S]`, in slots 0..S-1); `attention_mask` `[rows, S, slots]`."""
        token_ids = ops.convert_to_tensor(token_ids, "int32")
        x = embed(self.backbone, token_ids, ops.zeros_like(token_ids), training=False)
        shape = (ops.shape(token_ids)[0], 2, self.backbone.num_heads, ops.shape(attention_mask)[-1],
                 self.backbone.hidden_dim // self.backbone.num_heads)
        caches = []
        for block in applied_blocks(self.backbone):
            cache = ops.zeros(shape, block.compute_dtype)
            x, cache = block(x, attention_mask=attention_mask, cache=cache, cache_update_index=0, training=False)
            caches.append(cache)
        return caches

    def cached_step(self, caches, parents, token_ids, segment_ids, new_positions, attention_mask, slot, top_k):
        """One decoding step on two new positions (`new_positions` `[rows, 2]`: the previous token, then the
        `[MASK]`), written to cache slots `slot` and `slot + 1` after the caches are reordered by `parents`:
        `(log-probabilities, ids, caches)`. `token_ids`/`segment_ids` are the whole rows (for the embedding's
        positions); `attention_mask` `[rows, 2, slots]`."""
        parents = ops.convert_to_tensor(parents, "int32")
        token_ids = ops.convert_to_tensor(token_ids, "int32")
        x = embed(self.backbone, token_ids, ops.convert_to_tensor(segment_ids, "int32"), training=False)
        x = ops.take_along_axis(x, ops.convert_to_tensor(new_positions, "int32")[:, :, None], axis=1)
        updated = []
        for block, cache in zip(applied_blocks(self.backbone), caches):
            x, cache = block(x, attention_mask=attention_mask, cache=ops.take(cache, parents, axis=0),
                             cache_update_index=slot, training=False)
            updated.append(cache)
        scores, ids = self.next_tokens(self.mlm_head(finish(self.backbone, x)[:, 1:])[:, 0], top_k)
        return scores, ids, updated


def generation_bias(tokenizer):
    """float32 `[vocabulary]`: 0, or `NOT_GENERATED` for the bracketed special tokens other than `[SEP]`
    (which ends a target) and `[UNK]`."""
    bias = np.array([NOT_GENERATED if is_bracketed(token) else 0.0 for token in tokenizer.get_vocabulary()],
                    np.float32)
    bias[[tokenizer.sep_token_id, tokenizer.unk_token_id]] = 0.0
    return bias


def check_options(backbone, preprocessor, max_source_length, max_target_length, mask_probability, head):
    """Errors for the constructor's options, before any layer is built."""
    if not isinstance(backbone, BertBackbone):
        raise TypeError(f"backbone must be a BertBackbone, got {type(backbone).__name__}.")
    if head is not None:
        raise ValueError("BertSeq2Seq predicts tokens with the masked-LM head tied to the token embeddings; it takes "
                         "no head= of your own.")
    check_count("max_source_length", max_source_length)
    check_count("max_target_length", max_target_length)
    packed = max_source_length + max_target_length + 3
    if packed > longest_input(backbone):
        raise ValueError(f"max_source_length + max_target_length + 3 = {packed} tokens do not fit the backbone's "
                         f"{longest_input(backbone)} positions; lower one of them.")
    if preprocessor.sequence_length is not None and preprocessor.sequence_length < packed:
        raise ValueError(f"The preprocessor truncates at sequence_length={preprocessor.sequence_length}, shorter than "
                         f"max_source_length + max_target_length + 3 = {packed}: build it with sequence_length >= "
                         f"{packed}, or None.")
    check_number("mask_probability", mask_probability, 0, 1, low_open=True, hint=" UniLM uses 0.7.")
