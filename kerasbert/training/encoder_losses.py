"""Keras losses for training a `BertTextEncoder`: the embedding losses of `embedding_losses` as `keras.losses.Loss`
objects, which `compile` and `fit` take like any other loss; and `ListwiseSoftmaxLoss`, a `BertCrossEncoder`'s.

A training batch of the encoder holds `examples x texts` texts, example-major (an example's anchor, positive and
negatives, or its two texts, one after the other), so the model's output is `[examples * texts, dim]`; `y_true` is
one value per example (a pair's score or label; 0 where the loss reads none), which also says how many examples the
batch holds. Each loss returns one value per example where its definition has one (so sample weights weight
examples), else the batch's value (CoSENT, AnglE: every pair against every other pair).

Examples:
    >>> encoder.fit(pairs, loss=MultipleNegativesRankingLoss(scale=20.0, symmetric=True))
    >>> encoder.fit(pairs, loss=MatryoshkaLoss(MultipleNegativesRankingLoss(), dimensions=(384, 256, 128, 64)))
    >>> encoder.compile(optimizer="adam", loss=CoSENTLoss())     # then fit as usual
"""

import keras
import numpy as np
from keras import ops

from kerasbert.training import embedding_losses


def grouped_by_example(y_true, y_pred):
    """`y_pred` `[examples * texts, dim]` -> `[examples, texts, dim]`, `examples` read from `y_true`."""
    return ops.reshape(y_pred, (ops.shape(y_true)[0], -1, y_pred.shape[-1]))


class EncoderLoss(keras.losses.Loss):
    """Base of the encoder losses: `call` groups the batch's texts by example and hands them to `loss_of`."""

    needs_scores = False  # whether the examples are scored or labelled pairs (a `score` column)
    texts = None  # texts per example the loss reads: None for any number from 2

    def __init__(self, name=None, **kwargs):
        super().__init__(name=name or snake_case(type(self).__name__), **kwargs)

    def call(self, y_true, y_pred):
        return self.loss_of(grouped_by_example(y_true, y_pred), y_true)

    def loss_of(self, grouped, y_true):
        """The loss of the `[examples, texts, dim]` vectors `grouped` and the examples' `y_true`."""
        raise NotImplementedError


def snake_case(name):
    return "".join(f"_{c.lower()}" if c.isupper() and i and not name[i - 1].isupper() else c.lower()
                   for i, c in enumerate(name))


class MultipleNegativesRankingLoss(EncoderLoss):
    """In-batch negatives (InfoNCE), as sentence-transformers' `MultipleNegativesRankingLoss`: each anchor's positive
    among every positive and hard negative of the batch, cosine x `scale`; `symmetric=True` also ranks each
    positive's anchor among the anchors. Rows: (anchor, positive, any hard negatives).

    Examples:
        >>> encoder.fit(pd.DataFrame({"anchor": questions, "positive": answers}), loss=MultipleNegativesRankingLoss())
    """

    def __init__(self, scale=20.0, symmetric=False, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.symmetric = float(scale), bool(symmetric)

    def loss_of(self, grouped, y_true):
        documents = ops.reshape(ops.transpose(grouped[:, 1:], (1, 0, 2)), (-1, grouped.shape[-1]))  # positives first
        return embedding_losses.in_batch_ranking_loss(grouped[:, 0], documents, self.scale, self.symmetric,
                                                      per_example=True)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "symmetric": self.symmetric}


class CachedMultipleNegativesRankingLoss(MultipleNegativesRankingLoss):
    """`MultipleNegativesRankingLoss` trained with GradCache (`kerasbert.training.grad_cache`), as
    sentence-transformers' `CachedMultipleNegativesRankingLoss`: the batch is embedded `mini_batch_size` texts at a
    time, so a batch of thousands of in-batch negatives trains in the memory of one mini-batch. Same loss and
    gradient as the plain loss with the same dropout masks, for one more forward pass of each text.

    Examples:
        >>> encoder.fit(pairs, batch_size=1024, loss=CachedMultipleNegativesRankingLoss(mini_batch_size=64))
    """

    def __init__(self, scale=20.0, symmetric=False, mini_batch_size=32, **kwargs):
        super().__init__(scale=scale, symmetric=symmetric, **kwargs)
        if isinstance(mini_batch_size, bool) or not isinstance(mini_batch_size, (int, np.integer)) \
                or mini_batch_size < 1:
            raise ValueError(f"mini_batch_size must be a positive int (texts embedded at a time); got "
                             f"{mini_batch_size!r}.")
        self.mini_batch_size = int(mini_batch_size)

    def get_config(self):
        return {**super().get_config(), "mini_batch_size": self.mini_batch_size}


class CoSENTLoss(EncoderLoss):
    """CoSENT, as sentence-transformers' `CoSENTLoss`: pairs of higher score get higher cosine similarity.
    Rows: (text, text_pair, score)."""

    needs_scores, texts = True, 2
    pair_loss = staticmethod(embedding_losses.cosent_loss)

    def __init__(self, scale=20.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = float(scale)

    def loss_of(self, grouped, y_true):
        return self.pair_loss(grouped[:, 0], grouped[:, 1], scores=y_true, scale=self.scale)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


class AnglELoss(CoSENTLoss):
    """AnglE, as sentence-transformers' `AnglELoss`: CoSENT on the angle similarity. Rows: (text, text_pair, score)."""

    pair_loss = staticmethod(embedding_losses.angle_loss)


class ContrastiveLoss(EncoderLoss):
    """Contrastive loss, as sentence-transformers' `ContrastiveLoss`: pairs labelled 1 pulled together, pairs
    labelled 0 pushed past `margin` in cosine distance. Rows: (text, text_pair, score in {0, 1})."""

    needs_scores, texts = True, 2

    def __init__(self, margin=0.5, **kwargs):
        super().__init__(**kwargs)
        self.margin = float(margin)

    def loss_of(self, grouped, y_true):
        return embedding_losses.contrastive_loss(grouped[:, 0], grouped[:, 1], labels=y_true, margin=self.margin,
                                                 per_example=True)

    def get_config(self):
        return {**super().get_config(), "margin": self.margin}


class TripletLoss(EncoderLoss):
    """Triplet loss, as sentence-transformers' `TripletLoss` (Euclidean): the positive `margin` closer than the
    negative. Rows: (anchor, positive, negative)."""

    texts = 3

    def __init__(self, margin=5.0, **kwargs):
        super().__init__(**kwargs)
        self.margin = float(margin)

    def loss_of(self, grouped, y_true):
        return embedding_losses.triplet_loss(grouped[:, 0], grouped[:, 1], grouped[:, 2], margin=self.margin,
                                             per_example=True)

    def get_config(self):
        return {**super().get_config(), "margin": self.margin}


class MatryoshkaLoss(EncoderLoss):
    """`loss` summed over nested prefixes of the vectors (each re-normalised), as sentence-transformers'
    `MatryoshkaLoss`: the first `dimensions[k]` values make a usable vector on their own
    (`encoder.encode(texts, dimensions=k)`).

    Examples:
        >>> MatryoshkaLoss(MultipleNegativesRankingLoss(), dimensions=(384, 256, 128, 64))
    """

    def __init__(self, loss, dimensions, weights=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(loss, EncoderLoss) or isinstance(loss, MatryoshkaLoss):
            raise ValueError(f"MatryoshkaLoss wraps one of the encoder losses (e.g. MultipleNegativesRankingLoss()); "
                             f"got {loss!r}.")
        dimensions = tuple(dimensions)
        if not dimensions or not all(isinstance(d, (int, np.integer)) and d > 0 for d in dimensions):
            raise ValueError(f"dimensions must be positive ints, e.g. (384, 256, 128, 64); got {dimensions!r}.")
        if weights is not None and len(weights) != len(dimensions):
            raise ValueError(f"{len(weights)} weights for {len(dimensions)} dimensions: give one weight per dimension.")
        self.loss, self.dimensions = loss, tuple(int(d) for d in dimensions)
        self.weights = None if weights is None else tuple(float(w) for w in weights)
        self.needs_scores, self.texts = loss.needs_scores, loss.texts
        self.mini_batch_size = getattr(loss, "mini_batch_size", None)  # a cached loss stays cached (GradCache)

    def loss_of(self, grouped, y_true):
        return embedding_losses.matryoshka_loss(lambda cut: self.loss.loss_of(cut, y_true), [grouped],
                                                self.dimensions, self.weights)

    def get_config(self):
        return {**super().get_config(), "loss": keras.saving.serialize_keras_object(self.loss),
                "dimensions": list(self.dimensions), "weights": None if self.weights is None else list(self.weights)}

    @classmethod
    def from_config(cls, config):
        return cls(**{**config, "loss": keras.saving.deserialize_keras_object(config["loss"])})


class ListwiseSoftmaxLoss(keras.losses.Loss):
    """Softmax cross-entropy of each query's positive (its first passage) among its passages: the logits of a
    batch `[queries * passages, 1]`, `y_true` one 0 per query (the positive's index).

    Examples:
        >>> ListwiseSoftmaxLoss()(np.zeros(2), np.array([[3.0], [0.5], [1.0], [2.0]]))   # two queries, 2 each
    """

    def __init__(self, name="listwise_softmax", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        logits = keras.ops.reshape(y_pred, (keras.ops.shape(y_true)[0], -1))
        return keras.losses.sparse_categorical_crossentropy(y_true, logits, from_logits=True)


ENCODER_LOSSES = {
    "multiple_negatives_ranking": MultipleNegativesRankingLoss,
    "cached_multiple_negatives_ranking": CachedMultipleNegativesRankingLoss,
    "cosent": CoSENTLoss,
    "angle": AnglELoss,
    "contrastive": ContrastiveLoss,
    "triplet": TripletLoss,
}
for loss_class in (*ENCODER_LOSSES.values(), MatryoshkaLoss, ListwiseSoftmaxLoss):
    keras.saving.register_keras_serializable(package="kerasbert")(loss_class)


def encoder_loss(loss, rows, width):
    """The loss `BertTextEncoder.fit` trains with: `loss` (an encoder loss, or its name in `ENCODER_LOSSES`), or
    by default multiple-negatives ranking for (anchor, positive) rows and CoSENT for scored pairs; checked against
    the training `rows` (a `TextTuples`, or None) and the encoder's `width` before anything runs.

    Examples:
        >>> encoder_loss("cosent", None, 384)
        <CoSENTLoss ...>
    """
    if loss is None:
        loss = CoSENTLoss() if rows is not None and rows.scored else MultipleNegativesRankingLoss()
    elif isinstance(loss, str):
        if loss not in ENCODER_LOSSES:
            raise ValueError(f"Unknown loss {loss!r}: name one of {list(ENCODER_LOSSES)}, or give a loss object of "
                             "kerasbert.training.encoder_losses.")
        loss = ENCODER_LOSSES[loss]()
    elif not isinstance(loss, EncoderLoss):
        raise TypeError(f"loss must be an encoder loss of kerasbert.training.encoder_losses (e.g. "
                        f"MultipleNegativesRankingLoss()) or its name; got {loss!r}. To train with another Keras "
                        "loss, compile the encoder yourself.")
    if isinstance(loss, MatryoshkaLoss) and max(loss.dimensions) > width:
        raise ValueError(f"MatryoshkaLoss dimensions {list(loss.dimensions)} go past the encoder's {width} values.")
    if rows is not None:
        check_rows_fit(loss, rows)
    return loss


def check_rows_fit(loss, rows):
    """Raise unless `loss` reads training rows laid out as `rows` are."""
    name = type(loss.loss if isinstance(loss, MatryoshkaLoss) else loss).__name__
    if loss.needs_scores and not rows.scored:
        raise ValueError(f"{name} trains on scored pairs (text, text_pair, score); these rows are (anchor, positive): "
                         "use MultipleNegativesRankingLoss or TripletLoss, or give scored pairs.")
    if rows.scored and not loss.needs_scores:
        raise ValueError(f"{name} trains on (anchor, positive[, negative]) rows; these are scored pairs (text, "
                         "text_pair, score): use CoSENTLoss, AnglELoss or ContrastiveLoss.")
    if loss.texts is not None and loss.texts != rows.texts_per_example:
        raise ValueError(f"{name} reads {loss.texts} texts per row; these rows have {rows.texts_per_example}. "
                         + ("Give one `negative` text per row." if loss.texts == 3 else ""))
