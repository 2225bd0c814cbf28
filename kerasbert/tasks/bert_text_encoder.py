"""BertTextEncoder: raw text in, one vector per text out, for feature-based use and semantic search."""

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kerasbert.arguments import check_count
from kerasbert.data.prepared import Prepared
from kerasbert.data.validation import require_columns, to_dataframe, validate_text_columns
from kerasbert.layers.sentence_pooling import POOLING_MODES, SentencePooling
from kerasbert.presets.loading import preset_folder
from kerasbert.presets.registry import PRESETS
from kerasbert.presets.sentence_transformers_format import read_sentence_transformers_settings
from kerasbert.retrieval.exact_index import ExactIndex, unit_rows
from kerasbert.tasks.columns import column_argument
from kerasbert.tasks.task import Task


@keras.saving.register_keras_serializable(package="kerasbert")
class BertTextEncoder(Task):
    """Sentence embeddings: BERT's token vectors pooled over the real tokens (`SentencePooling`), optionally
    L2-normalised, as sentence-transformers computes them.

    `from_preset` on a sentence-transformers folder (e.g. `all_minilm_l6_v2_en`) reads its pooling, its
    normalisation and its `max_seq_length` (256 for all-MiniLM-L6-v2); any argument you give wins. Elsewhere
    the defaults are mean pooling without normalisation.

    Args:
        backbone: a `BertBackbone`. preprocessor: a `BertPreprocessor`.
        pooling: "mean" (average of the real tokens), "cls" (the `[CLS]` vector) or "max".
        normalize: divide each vector by its L2 norm (then a dot product is the cosine similarity).
        columns: `{"text": ...}`, the DataFrame column of the texts (default "text").

    Examples:
        >>> encoder = BertTextEncoder.from_preset("all_minilm_l6_v2_en")
        >>> vectors = encoder.encode(["A man is eating food.", "A man is riding a horse."])   # [2, 384] numpy
        >>> encoder.search(["Who eats?"], corpus=["A man is eating food.", "A cat sleeps."], top_k=1)
    """

    config_names = ("pooling", "normalize")
    default_columns = {"text": "text"}

    def __init__(self, backbone, preprocessor, pooling="mean", normalize=False, **kwargs):
        inputs = backbone.input
        features = backbone(inputs)
        outputs = SentencePooling(pooling, normalize=normalize, name="sentence_pooling")(
            features["sequence_output"], inputs["padding_mask"])
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor, **kwargs)
        self.pooling = pooling
        self.normalize = normalize

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
        if with_labels:
            raise ValueError("BertTextEncoder computes embeddings and learns no labels: use encode() or predict(). "
                             "To fine-tune on labelled pairs, train a BertClassifier (regression on text pairs) "
                             "and encode with its backbone.")
        text = self.columns["text"]
        frame = to_dataframe(data, text_column=text)
        require_columns(frame, {column_argument("text"): text})
        validate_text_columns(frame, {column_argument("text"): text}, allow_empty=True)
        return Prepared(frame=frame, features=self.pack_texts(frame[text].tolist()))

    # === Inference ===

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
