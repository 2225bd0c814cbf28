"""Long documents through XLNet's recurrence memory: a `BertClassifier` on an `XLNetBackbone` reads a document
segment by segment, each segment attending to the memory the previous ones left (Transformer-XL), and classifies
it from the last segment's `<cls>`.

A document is one stream, `pieces <sep> <cls>` (segment ids 0, `<cls>` 2), cut into segments of
`segment_length` tokens from the start (the first one as long as the memory); the memory keeps the last
`memory_length` hidden states of every layer (the backbone's, HF `mem_len`), so the `<cls>` sees the document's
end directly and, through the layers' recurrence, further back. Training is Transformer-XL's: the memory
carries no gradient, the loss is on the last segment's logits (the memory is read without dropout), one document
a step.

Examples:
    >>> classifier = BertClassifier.from_preset("my_xlnet_folder", labels=["ham", "spam"],
    ...                                         backbone_overrides={"memory_length": 384})
    >>> reader = MemoryReader(classifier, segment_length=128)
    >>> reader.fit_documents(train_df, epochs=2)
    >>> reader.predict_documents(test_df["text"])     # [documents, classes] logits
    >>> classifier.save("long_documents.keras")         # the trained classifier
"""


import keras
import numpy as np

from kerasbert.arguments import check_count
from kerasbert.data.validation import require_columns, to_dataframe, validate_text_columns
from kerasbert.training.default_optimizer import create_optimizer
from kerasbert.training.unused_weights import weights_unused_by_design


class MemoryReader(keras.Model):
    """A document -> the classifier's logits, read segment by segment through the backbone's memory (module
    docstring). Called on the last segment and the memory the others left (`last_inputs`); the memory is computed
    by compiled calls of the backbone. The first segment fills the memory (it holds `max(segment_length,
    memory_length)` tokens) and the last is padded on the right to its segment's length (XLNet's relative
    positions keep the real tokens' outputs), so that documents of any length share two compiled shapes.

    Args:
        classifier: a `BertClassifier` on an `XLNetBackbone` with a `memory_length` (its weights are trained and
            read in place: save the classifier afterwards).
        segment_length: tokens per segment.

    Examples:
        >>> reader = MemoryReader(classifier, segment_length=128)
        >>> logits = reader.predict_on_batch(reader.last_inputs("A long text ..."))
    """

    def __init__(self, classifier, segment_length, **kwargs):
        super().__init__(**kwargs)
        check_count("segment_length", segment_length, minimum=2)
        if not getattr(classifier.backbone, "memory_length", None):
            raise ValueError(f"Reading through the memory needs a backbone that keeps one: this "
                             f"{type(classifier.backbone).__name__} has memory_length="
                             f"{getattr(classifier.backbone, 'memory_length', None)!r}. Build the classifier on an "
                             "XLNet preset with backbone_overrides={'memory_length': 384} (or another positive int).")
        if classifier.logits_layer is None or classifier.logits_layer.units is None:
            raise ValueError("MemoryReader reads with the classifier's default head and its labels: build the "
                             "classifier with labels=[...] (or num_classes) and no head=.")
        self.classifier, self.segment_length = classifier, segment_length
        self.dropout = keras.layers.Dropout(classifier.dropout)
        self.memory_step = MemoryStep(classifier.backbone)

    def call(self, inputs, training=None):
        """`inputs`: a segment's `{token_ids, segment_ids, padding_mask}`, with `memory` unless it is the first."""
        pooled = self.classifier.backbone(inputs, training=training)["pooled_output"]
        return self.classifier.logits_layer(self.dropout(pooled, training=training))

    def last_inputs(self, text):
        """The inputs `call` reads for `text`: its last segment with the memory its other segments left."""
        first_length = max(self.segment_length, self.classifier.backbone.memory_length)
        segments = memory_segments(self.classifier.tokenizer, text, self.segment_length, first_length)
        memory = None
        for segment in segments[:-1]:
            memory = self.memory_step.predict_on_batch(with_memory(segment, memory))
        length = first_length if memory is None else self.segment_length
        return with_memory(padded_on_the_right(segments[-1], length), memory)

    def predict_documents(self, texts):
        """Each text's logits `[documents, classes]` (numpy), read through the memory."""
        logits = [self.predict_on_batch(self.last_inputs(str(text))) for text in texts]
        return np.concatenate(logits) if logits else np.zeros((0, self.classifier.num_classes), "float32")

    def fit_documents(self, data, epochs=1, learning_rate=5e-5, seed=0):
        """Train on a DataFrame of documents (the classifier's `text` and `label` columns), one document a step
        in a shuffled order per epoch, with kerasbert's default AdamW (warmup and linear decay); each step reads
        the memory with the weights of that step. Returns the mean loss of each epoch."""
        check_count("epochs", epochs)
        frame = to_dataframe(data, text_column=self.classifier.columns["text"])
        columns = {"text": self.classifier.columns["text"], "label": self.classifier.columns["label"]}
        require_columns(frame, columns)
        validate_text_columns(frame, {"text": columns["text"]})
        if not self.classifier.label_encoder.is_fitted:  # its problem type (and names) from the first data
            self.classifier.fit_label_encoder(frame[columns["label"]])
        labels = self.classifier.label_encoder.encode(frame[columns["label"]])
        texts = frame[columns["text"]].astype(str).tolist()
        self.compile(optimizer=create_optimizer(epochs * len(frame), learning_rate),
                     loss=self.classifier.default_loss())
        order = np.random.default_rng(seed)
        losses = []
        with weights_unused_by_design():  # the query stream's mask embedding is unused here
            for _ in range(epochs):
                epoch = [float(self.train_on_batch(self.last_inputs(texts[row]), labels[row:row + 1]))
                         for row in order.permutation(len(frame))]
                losses.append(float(np.mean(epoch)))
        return losses


class MemoryStep(keras.Model):
    """One segment (and the memory before it) -> the backbone's `new_memory`, as a model to compile."""

    def __init__(self, backbone, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone

    def call(self, inputs):
        return self.backbone(inputs, training=False)["new_memory"]


def with_memory(segment, memory):
    return segment if memory is None else {**segment, "memory": list(memory)}


def padded_on_the_right(segment, length):
    """A `[1, t]` segment padded to `[1, length]`: pad ids 0, padding mask 0 (never attended to)."""
    return {name: np.pad(values, ((0, 0), (0, length - values.shape[1]))) for name, values in segment.items()}


def memory_segments(tokenizer, text, segment_length, first_length=None):
    """`text` as XLNet reads it through its memory: `pieces <sep> <cls>` cut from the start into a first segment
    of `first_length` tokens (default `segment_length`), then segments of `segment_length` (the last one shorter),
    as `[1, length]` input dicts; segment ids 0, and 2 for `<cls>`.

    Examples:
        >>> [segment["token_ids"].shape for segment in memory_segments(tokenizer, "A long text ...", 128)]
        [(1, 128), (1, 128), (1, 37)]
    """
    pieces = np.asarray(tokenizer.tokenize([text])[0].numpy(), "int32")
    token_ids = np.concatenate([pieces, [tokenizer.sep_token_id, tokenizer.cls_token_id]]).astype("int32")
    segment_ids = np.zeros_like(token_ids)
    segment_ids[-1] = tokenizer.packer_class.cls_segment_id
    first_length = first_length or segment_length
    starts = [0, *range(first_length, len(token_ids), segment_length)]
    ends = [*starts[1:], len(token_ids)]
    return [{"token_ids": token_ids[None, start:end], "segment_ids": segment_ids[None, start:end],
             "padding_mask": np.ones((1, end - start), "int32")} for start, end in zip(starts, ends)]
