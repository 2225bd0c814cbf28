"""BertTextEncoder: raw text in, one vector per text out, for feature-based use and semantic search."""

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kerasbert.arguments import check_count
from kerasbert.data.batch_order import BatchOrder
from kerasbert.data.no_duplicates import NoDuplicateBatchOrder
from kerasbert.data.prepared import Prepared
from kerasbert.data.text_tuples import ENCODER_ROLES, text_tuples
from kerasbert.data.validation import require_columns, to_dataframe, validate_text_columns
from kerasbert.layers.sentence_pooling import POOLING_MODES, SentencePooling
from kerasbert.metrics import statistics
from kerasbert.presets.loading import preset_folder
from kerasbert.presets.registry import PRESETS
from kerasbert.presets.sentence_transformers_format import read_sentence_transformers_settings
from kerasbert.retrieval.exact_index import ExactIndex, unit_rows
from kerasbert.tasks.columns import column_argument
from kerasbert.tasks.grouped_rows import GROUP_SIZE, grouped_batches, is_grouped, longest_of_each, outputs_of_rows
from kerasbert.tasks.pipeline_model import batch_spec
from kerasbert.tasks.run_arguments import DEFAULT_BATCH_SIZE
from kerasbert.tasks.task import Task
from kerasbert.training import grad_cache
from kerasbert.training.encoder_losses import encoder_loss

TEXT_IDS, SCORED = "text_ids", "scored"  # `Prepared.extras` of training rows


@keras.saving.register_keras_serializable(package="kerasbert")
class BertTextEncoder(Task):
    """Sentence embeddings: BERT's token vectors pooled over the real tokens (`SentencePooling`), optionally
    L2-normalised, as sentence-transformers computes them.

    `from_preset` on a sentence-transformers folder (e.g. `all_minilm_l6_v2_en`) reads its pooling, its
    normalisation and its `max_seq_length` (256 for all-MiniLM-L6-v2); any argument you give wins. Elsewhere
    the defaults are mean pooling without normalisation.

    `fit` trains the encoder on rows of (`anchor`, `positive`[, `negative`]) (default loss: multiple-negatives
    ranking, in-batch negatives) or scored pairs (`text`, `text_pair`, `score`; default loss: CoSENT); see `fit`.

    Args:
        backbone: a `BertBackbone`. preprocessor: a `BertPreprocessor`.
        pooling: "mean" (average of the real tokens), "cls" (the `[CLS]` vector) or "max".
        normalize: divide each vector by its L2 norm (then a dot product is the cosine similarity).
        columns: `{role: column}` for the roles "text" (texts to encode), "anchor", "positive", "negative" (a text
            or a list of texts per row), "text_pair" and "score" (each role's default column is its name).

    Examples:
        >>> encoder = BertTextEncoder.from_preset("all_minilm_l6_v2_en")
        >>> vectors = encoder.encode(["A man is eating food.", "A man is riding a horse."])   # [2, 384] numpy
        >>> encoder.search(["Who eats?"], corpus=["A man is eating food.", "A cat sleeps."], top_k=1)
        >>> encoder.fit(pd.DataFrame({"anchor": questions, "positive": passages}), epochs=1)
    """

    config_names = ("pooling", "normalize")
    default_columns = ENCODER_ROLES
    nullable_columns = tuple(role for role in ENCODER_ROLES if role != "text")

    def __init__(self, backbone, preprocessor, pooling="mean", normalize=False, **kwargs):
        inputs = backbone.input
        features = backbone(inputs)
        outputs = SentencePooling(pooling, normalize=normalize, name="sentence_pooling")(
            features["sequence_output"], inputs["padding_mask"])
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor, **kwargs)
        self.pooling = pooling
        self.normalize = normalize
        self.requested_loss = self.training_loss = None

    @classmethod
    def from_preset(cls, preset, pooling=None, normalize=None, sequence_length=None, load_weights=True, **kwargs):
        """The encoder of `preset`, pooled as its sentence-transformers files say (see the class docstring).

        Examples:
            >>> BertTextEncoder.from_preset("all_minilm_l6_v2_en").sequence_length
            256
        """
        if pooling is not None and pooling not in POOLING_MODES:
            raise ValueError(f"pooling={pooling!r} is not one of {list(POOLING_MODES)}.")
        folder = preset_folder(preset) if load_weights or str(preset) not in PRESETS else None
        settings = read_sentence_transformers_settings(folder)
        return super().from_preset(
            preset, load_weights=load_weights,
            sequence_length=sequence_length if sequence_length is not None else settings.get("sequence_length"),
            pooling=pooling or settings.get("pooling", "mean"),
            normalize=normalize if normalize is not None else settings.get("normalize", False), **kwargs)

    # === Data ===

    def prepare(self, data, with_labels, training=False):
        frame = to_dataframe(data, text_column=self.columns["text"])
        if with_labels:
            rows = text_tuples(frame, self.columns)
            if training:
                self.training_loss = encoder_loss(self.requested_loss, rows, self.backbone.hidden_dim)
            return Prepared(frame=frame, features=self.pack_texts(rows.texts), labels=rows.scores,
                            extras={GROUP_SIZE: rows.texts_per_example, TEXT_IDS: rows.text_ids,
                                    SCORED: rows.scored})
        text = self.columns["text"]
        require_columns(frame, {column_argument("text"): text})
        validate_text_columns(frame, {column_argument("text"): text}, allow_empty=True)
        return Prepared(frame=frame, features=self.pack_texts(frame[text].tolist()))

    def batches(self, prepared, *, with_labels, training=False, batch_size=DEFAULT_BATCH_SIZE, seed=0,
                group_by_length=True, order=None, epochs=None):
        """`Task.batches`; training rows come as whole examples, `[examples * texts, tokens]` (an example's texts one
        after the other), and a training batch repeats no text (`NoDuplicateBatchOrder`; not grouped by length, so
        that in-batch negatives stay a random sample)."""
        if not is_grouped(prepared):
            return super().batches(prepared, with_labels=with_labels, training=training, batch_size=batch_size,
                                   seed=seed, group_by_length=group_by_length, order=order, epochs=epochs)
        batch_order = (NoDuplicateBatchOrder(seed=seed, epochs=epochs, text_ids=prepared.extras[TEXT_IDS])
                       if training else BatchOrder(order=order))
        return grouped_batches(self, prepared, with_labels=with_labels, batch_size=batch_size, batch_order=batch_order)

    def example_lengths(self, prepared):
        """Tokens per text; of training rows, per example (its longest text)."""
        lengths = super().example_lengths(prepared)
        return longest_of_each(lengths, prepared) if is_grouped(prepared) else lengths

    # === Training ===

    def fit(self, x=None, y=None, loss=None, **kwargs):
        """Train the encoder on a DataFrame of rows (`Task.fit`: epochs, learning rate, validation data, backup...).

        Rows: (`anchor`, `positive`) texts, with hard negatives in a `negative` column (a text, or a list of
        texts per row); or scored pairs (`text`, `text_pair`, `score`). `loss`: an encoder loss of
        `kerasbert.training.encoder_losses` or its name ("multiple_negatives_ranking", "cosent", "angle",
        "contrastive", "triplet", "cached_multiple_negatives_ranking": GradCache, for batches past memory);
        default: multiple-negatives ranking (scale 20) for anchor rows, CoSENT for
        scored pairs. Wrap it in `MatryoshkaLoss(loss, dimensions)` for vectors that can be cut short. A training
        batch holds no text twice (see `batches`), so `batch_size` is also the number of in-batch negatives.

        Examples:
            >>> encoder.fit(pd.DataFrame({"anchor": questions, "positive": passages}), epochs=1, batch_size=64)
            >>> encoder.fit(sts_train, loss=MatryoshkaLoss(CoSENTLoss(), dimensions=(384, 256, 128, 64)))
        """
        self.requested_loss = loss
        return super().fit(x, y, **kwargs)

    def default_loss(self):
        return self.training_loss or encoder_loss(self.requested_loss, None, self.backbone.hidden_dim)

    def train_step(self, *args):
        """Keras' step; with a cached loss (one with `mini_batch_size`), GradCache's (`training.grad_cache`)."""
        size = getattr(self.loss, "mini_batch_size", None)
        return super().train_step(*args) if size is None else grad_cache.train_step(self, size, *args)

    def _symbolic_build(self, iterator=None, data_batch=None):
        """Keras' build, with the loss built without a trace: JAX and torch trace it on made-up batch sizes, one text
        per example, which no encoder loss reads."""
        if self._compile_loss is not None and not self._compile_loss.built:
            _, y, _ = keras.utils.unpack_x_y_sample_weight(batch_spec(iterator) if data_batch is None else data_batch)
            self._compile_loss.build(y, keras.KerasTensor((None, self.backbone.hidden_dim)))
        super()._symbolic_build(iterator, data_batch)

    # === Metrics ===

    def score(self, outputs, prepared):
        """Scored pairs: Pearson and Spearman correlation of the cosine similarity with the scores (as
        sentence-transformers' `EmbeddingSimilarityEvaluator`). Other rows: `accuracy` (the anchor's own positive is
        the most similar of every positive and negative of the data) and `mrr@10`."""
        if prepared.extras[SCORED]:
            similarity = np.sum(unit_rows(outputs[:, 0]) * unit_rows(outputs[:, 1]), axis=1)
            return {"pearson": statistics.pearson(prepared.labels, similarity),
                    "spearman": statistics.spearman(prepared.labels, similarity)}
        anchors, candidates = outputs[:, 0], outputs[:, 1:].transpose(1, 0, 2).reshape(-1, outputs.shape[-1])
        similarity = cosine_similarity(anchors, candidates)
        own = similarity[np.arange(len(anchors)), np.arange(len(anchors))]
        rank = 1 + np.sum(similarity > own[:, None], axis=1)
        return {"accuracy": float(np.mean(rank == 1)), "mrr@10": float(np.mean(np.where(rank <= 10, 1 / rank, 0))),
                "errors": prepared.frame.assign(positive_rank=rank)[rank > 1]}

    # === Inference ===

    def predict_outputs(self, data, batch_size=None, with_labels=False, verbose="auto"):
        """`Task.predict_outputs`; of training rows (to evaluate), the vectors `[examples, texts, dim]`."""
        if not with_labels:
            return super().predict_outputs(data, batch_size, verbose=verbose)
        prepared = self.prepare(data, with_labels=True)
        return outputs_of_rows(self, prepared, batch_size or DEFAULT_BATCH_SIZE, verbose), prepared

    def encode(self, texts, batch_size=None, verbose="auto", dimensions=None):
        """The vectors of `texts` (one text, a list, a Series or a DataFrame) as a float32 array
        `[texts, hidden]`, in input order. `dimensions=k`: each vector's first k values (a Matryoshka-trained
        model's shorter vectors), L2-normalised again where the encoder normalises.

        Examples:
            >>> encoder.encode("A man is eating food.").shape
            (1, 384)
            >>> encoder.encode("A man is eating food.", dimensions=128).shape
            (1, 128)
        """
        hidden = self.backbone.hidden_dim
        if dimensions is not None:
            check_count("dimensions", dimensions)
            if dimensions > hidden:
                raise ValueError(f"dimensions={dimensions} is more than the encoder's {hidden} values per vector.")
        outputs, _ = self.predict_outputs(texts, batch_size, verbose=verbose)
        vectors = np.asarray(outputs, np.float32).reshape(-1, hidden)[:, :dimensions]
        if self.normalize and dimensions is not None:
            vectors = unit_rows(vectors)
        return vectors

    def decode(self, outputs, prepared):
        return pd.DataFrame({"embedding": list(np.asarray(outputs, np.float32))}, index=prepared.frame.index)

    def similarity(self, texts, other_texts):
        """Cosine similarity of every text with every other text: `[len(texts), len(other_texts)]`.

        Examples:
            >>> encoder.similarity(["A man is eating."], ["Someone eats.", "A plane takes off."]).round(2)
        """
        return cosine_similarity(self.encode(texts, verbose=0), self.encode(other_texts, verbose=0))

    def search(self, queries, corpus, top_k=5):
        """Semantic search: for each query, the `top_k` most similar texts of `corpus` by cosine similarity (an
        `ExactIndex`; for a corpus searched again and again, build one and save it: `kerasbert.retrieval`).

        Returns a DataFrame with one row per (query, hit): `query`, `rank` (1 is the best), `text`,
        `corpus_index` and `score`.

        Examples:
            >>> encoder.search("Where do I plug it in?", corpus=reviews["text"], top_k=3)
        """
        check_count("top_k", top_k)
        queries = to_dataframe(queries, text_column="text")["text"].tolist()
        corpus = to_dataframe(corpus, text_column="text")["text"].tolist()
        index = ExactIndex(self.backbone.hidden_dim).add(self.encode(corpus, verbose=0))
        scores, positions = index.search(self.encode(queries, verbose=0), top_k)
        rows = [{"query": query, "rank": rank, "text": corpus[position], "corpus_index": int(position),
                 "score": float(score)}
                for query, row_scores, row_positions in zip(queries, scores, positions)
                for rank, (score, position) in enumerate(zip(row_scores, row_positions), start=1)]
        return pd.DataFrame(rows, columns=["query", "rank", "text", "corpus_index", "score"])

    # === Serving ===

    def serving_signature(self):
        return [tf.TensorSpec([None], tf.string, name="text")]

    def serve(self, texts):
        return {"embedding": self(self.preprocessor(texts), training=False)}


def cosine_similarity(vectors, other_vectors):
    """`[n, m]` cosine similarities of the rows of two arrays."""
    return unit_rows(vectors) @ unit_rows(other_vectors).T
