"""BertMaskedLM: fill in the `[MASK]` tokens of a text, as HF `BertForMaskedLM` and its fill-mask pipeline."""


import keras
import numpy as np
import pandas as pd
from keras import ops

from kerasbert.arguments import check_count
from kerasbert.data.prepared import Prepared
from kerasbert.data.validation import require_columns, to_dataframe, validate_text_columns
from kerasbert.deployment.model_function import ModelFunction
from kerasbert.families.checkpoint_weights import export_links, masked_lm_head_links
from kerasbert.families.family_heads import masked_lm_sequence
from kerasbert.tasks.columns import column_argument, reads_columns
from kerasbert.tasks.heads import checked_head_outputs
from kerasbert.tasks.masked_lm_common import (
    build_masked_lm_head,
    check_keras_data,
    check_no_custom_head,
    load_masked_lm_head,
    masked_lm_features,
    masked_lm_inputs,
    write_task_preset,
)
from kerasbert.tasks.run_arguments import DEFAULT_BATCH_SIZE, is_raw
from kerasbert.tasks.task import Task


@keras.saving.register_keras_serializable(package="kerasbert")
class BertMaskedLM(Task):
    """Fill-mask: backbone -> `MaskedLMHead` (tied to the token embedding) at the `[MASK]` positions.

    `predict(texts, top_k=5)` returns a DataFrame with one row per `[MASK]` written in a text
    (index: the text's index, repeated): `text`, `mask_index` (0 for the text's first `[MASK]`, ...),
    `tokens` (the `top_k` most probable tokens), `token_ids` and `scores` (their softmax
    probabilities over the vocabulary, descending). Model inputs are the backbone's plus
    `mask_positions` (int32 `[batch, P]`); the output is `[batch, P, vocabulary]` logits.

    `from_preset` loads a checkpoint's masked-LM head (`cls.predictions.*`: HF `BertForMaskedLM` /
    `BertForPreTraining` folders, Google checkpoints, and presets saved by `BertPretrainer` or this
    class; in the other families HF's `RobertaForMaskedLM`, `AlbertForMaskedLM`, `DistilBertForMaskedLM`
    and `ElectraForMaskedLM` heads, see `kerasbert.families.family_heads`); a checkpoint without one (e.g.
    all_minilm_l6_v2_en) gives an untrained head, with a warning. To train the head on text, use
    `BertPretrainer` and load its preset here.

    Args:
        backbone: a `BertBackbone`. preprocessor: a `BertPreprocessor`.
        columns: `{"text": ...}`, the DataFrame column holding the texts (default "text").
        head: a layer replacing the tied `MaskedLMHead`: called on `{"sequence_output",
            "pooled_output", "padding_mask", "mask_positions"}`, it returns `[batch, P, vocabulary]`
            logits. Saved in `.keras` files; it has no HF names, so `save_to_preset` and
            `export_to_hf` refuse it.

    Examples:
        >>> fill = BertMaskedLM.from_preset("my_pretrained_preset")
        >>> fill.predict(["Mr. Darcy was a [MASK] man."], top_k=3)[["tokens", "scores"]]
    """

    default_columns = {"text": "text"}

    def __init__(self, backbone, preprocessor, head=None, **kwargs):
        # === Functional model ===
        inputs = masked_lm_inputs(backbone)
        features = masked_lm_features(backbone, inputs)
        mlm_head = None
        if head is None:
            mlm_head = build_masked_lm_head(backbone)
            outputs = mlm_head(masked_lm_sequence(features), features["mask_positions"])
        else:
            outputs = checked_head_outputs(head, features, (None, None, backbone.vocabulary_size), "BertMaskedLM")
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor,
                         head=head, **kwargs)

        # === Config ===
        self.mlm_head = mlm_head
        # Built once, as Keras builds `predict_function`: a new compiled function each call would retrace.
        self.top_tokens_function = ModelFunction(self, self.top_tokens, static_argnums=(1,))

    # === Checkpoint heads and presets ===

    def heads_from_checkpoint(self, checkpoint):
        if self.mlm_head is not None:
            load_masked_lm_head(self.mlm_head, checkpoint, type(self).__name__, self.backbone.family)

    def head_weights(self):
        """The masked-LM head under the HF names of the backbone's family (`cls.predictions.*` in BERT)."""
        check_no_custom_head(self.head, "be written as a preset or HF folder")
        return export_links(masked_lm_head_links(self.mlm_head, self.backbone.family))

    def save_to_preset(self, folder):
        """Write a kerasbert preset (backbone, vocabulary, masked-LM head) that `from_preset` of any
        application reads.

        Examples:
            >>> fill.save_to_preset("my_fill_mask")
        """
        return write_task_preset(self, folder, self.head_weights())

    def export_to_hf(self, folder, allow_lossy=False):
        """Write a HF folder that `transformers.BertForMaskedLM.from_pretrained` loads.

        Examples:
            >>> fill.export_to_hf("hf_fill_mask")
        """
        return self.backbone.export_to_hf(folder, self.tokenizer, heads=self.head_weights(),
                                          allow_lossy=allow_lossy)

    # === Data ===

    def prepare(self, data, with_labels, training=False):
        if with_labels:
            raise ValueError(
                "BertMaskedLM only predicts. To train or evaluate a masked LM on text, use "
                "BertPretrainer (fit/evaluate on documents), then load its preset here with "
                "BertMaskedLM.from_preset(folder)."
            )
        text = self.columns["text"]
        frame = to_dataframe(data, text_column=text)
        if frame.empty:
            raise ValueError("No texts were given. Pass texts with [MASK] where a word should be predicted.")
        require_columns(frame, {column_argument("text"): text})
        validate_text_columns(frame, {column_argument("text"): text})
        texts = frame[text].tolist()
        features = self.pack_texts(texts)
        positions = self.mask_positions_of(frame.index, texts, features["token_ids"])
        width = max(len(row) for row in positions)
        padded = np.zeros((len(positions), width), np.int32)
        for row, found in enumerate(positions):
            padded[row, :len(found)] = found
        features["mask_positions"] = padded
        return Prepared(frame=frame, features=features, extras={"mask_counts": [len(p) for p in positions]})

    def mask_positions_of(self, index, texts, token_ids):
        """The `[MASK]` positions of each packed text; an error for a text without one, or whose
        `[MASK]` falls past `sequence_length`."""
        mask_id = self.tokenizer.mask_token_id
        written = [int(np.sum(row == mask_id)) for row in self.tokenizer(texts).numpy()]
        positions = [np.flatnonzero(row == mask_id) for row in token_ids.numpy()]
        for label, text, count, found in zip(index, texts, written, positions):
            if count == 0:
                raise ValueError(
                    f"Row {label!r} has no {self.tokenizer.mask_token} token to fill: {text[:60]!r}. "
                    f"Write {self.tokenizer.mask_token} where a word should be predicted."
                )
            if len(found) < count:
                raise ValueError(
                    f"Row {label!r} has {count} {self.tokenizer.mask_token} tokens, but only "
                    f"{len(found)} fit in sequence_length={self.sequence_length} tokens. Shorten "
                    "the text, or build the model with a longer sequence_length."
                )
        return positions

    # === Training ===

    def default_loss(self):
        """Keras-level training on `(x, mask_ids, mask_weights)`: cross-entropy averaged over the
        weighted (real) masked positions only."""
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                          reduction="mean_with_sample_weight")

    def default_weighted_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    # === Prediction ===

    @reads_columns
    def predict(self, x, batch_size=None, verbose="auto", top_k=5, **kwargs):
        """Raw texts -> DataFrame of the `top_k` tokens for each `[MASK]` (see the class docstring);
        other inputs (tensors, `tf.data`) go to Keras `predict`."""
        if not is_raw(x):
            check_keras_data(x, "texts (a list or Series of strings, or a DataFrame with a text column)",
                             "predict")
            return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        vocabulary_size = self.backbone.vocabulary_size
        check_count("top_k", top_k, 1, vocabulary_size)
        prepared = self.prepare(x, with_labels=False)
        dataset = self.batches(prepared, with_labels=False, batch_size=batch_size or DEFAULT_BATCH_SIZE)
        best_ids, best_scores = [], []
        for batch in dataset:
            scores, ids = self.top_tokens_function(batch, int(top_k))
            best_ids.append(ids)
            best_scores.append(scores)
        return self.decode((np.concatenate(best_ids), np.concatenate(best_scores)), prepared)

    def top_tokens(self, inputs, top_k):
        """`(probabilities, ids)` of the `top_k` most probable tokens at each mask position, each
        `[batch, P, top_k]` (only these leave the graph, not the `[batch, P, vocabulary]` logits)."""
        probabilities = ops.softmax(self(inputs, training=False), axis=-1)
        return ops.top_k(probabilities, top_k)

    def decode(self, outputs, prepared):
        best_ids, best_scores = outputs
        vocabulary = self.tokenizer.get_vocabulary()
        rows, index = [], []
        texts = prepared.frame[self.columns["text"]].tolist()
        counts = prepared.extras["mask_counts"]
        for row, (label, text, count) in enumerate(zip(prepared.frame.index, texts, counts)):
            for mask_index in range(count):
                ids = best_ids[row, mask_index]
                rows.append({"text": text, "mask_index": mask_index,
                             "tokens": [vocabulary[i] for i in ids], "token_ids": ids.tolist(),
                             "scores": best_scores[row, mask_index].tolist()})
                index.append(label)
        return pd.DataFrame(rows, index=pd.Index(index, name=prepared.frame.index.name))
