"""Long documents through XLNet's recurrence memory: a `BertClassifier` on an `XLNetBackbone` reads a document
segment by segment, each segment attending to the memory the previous ones left (Transformer-XL), and classifies
it from the last segment's `<cls>`.

A document is one stream, `pieces <sep> <cls>` (segment ids 0, `<cls>` 2), cut into segments of
`segment_length` tokens from the start; the memory keeps the last `memory_length` hidden states of every layer
(the backbone's, HF `mem_len`), so the `<cls>` sees the document's end directly and, through the layers'
recurrence, further back. Training is Transformer-XL's: the memory carries no gradient, the loss is on the last
segment's logits. One document per step (a document's segments are read in turn; documents of other lengths
have other numbers of segments).

Examples:
    >>> classifier = BertClassifier.from_preset("my_xlnet_folder", labels=["ham", "spam"],
    ...                                         backbone_overrides={"memory_length": 384})
    >>> reader = MemoryReader(classifier, segment_length=128)
    >>> reader.fit_documents(train_df, epochs=2)
    >>> reader.predict_documents(test_df["text"])     # [documents, classes] logits
"""

import keras
import numpy as np

from kerasbert.arguments import check_count
from kerasbert.data.validation import require_columns, to_dataframe, validate_text_columns
from kerasbert.training.default_optimizer import create_optimizer


class MemoryReader(keras.Model):
    """A document's segments -> the classifier's logits, read through the backbone's memory (module docstring).

    Args:
        classifier: a `BertClassifier` on an `XLNetBackbone` with a `memory_length` (its weights are trained and
            read in place: save the classifier afterwards).
        segment_length: tokens per segment (the last may be shorter).

    Examples:
        >>> logits = MemoryReader(classifier, segment_length=128)(memory_segments(classifier.tokenizer, text, 128))
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

    def call(self, segments, training=None):
        """`segments`: a list of `{token_ids, segment_ids, padding_mask}` `[1, length]`, in reading order."""
        backbone, memory = self.classifier.backbone, None
        for segment in segments:
            outputs = backbone(segment if memory is None else {**segment, "memory": memory}, training=training)
            memory = outputs["new_memory"]
        return self.classifier.logits_layer(self.dropout(outputs["pooled_output"], training=training))

    def predict_documents(self, texts):
        """Each text's logits `[documents, classes]` (numpy), read through the memory."""
        texts = [str(text) for text in texts]
        return np.concatenate([keras.ops.convert_to_numpy(self(self.segments_of(text), training=False))
                               for text in texts]) if texts else np.zeros((0, self.classifier.num_classes))

    def fit_documents(self, data, epochs=1, learning_rate=5e-5, seed=0):
        """Train on a DataFrame of documents (the classifier's `text` and `label` columns), one document a step
        in a shuffled order per epoch, with kerasbert's default AdamW (warmup and linear decay). Returns the mean
        loss of each epoch."""
        check_count("epochs", epochs)
        frame = to_dataframe(data, text_column=self.classifier.columns["text"])
        columns = {"text": self.classifier.columns["text"], "label": self.classifier.columns["label"]}
        require_columns(frame, columns)
        validate_text_columns(frame, {"text": columns["text"]})
        if not self.classifier.label_encoder.is_fitted:  # its problem type (and names) from the first data
            self.classifier.fit_label_encoder(frame[columns["label"]])
        labels = self.classifier.label_encoder.encode(frame[columns["label"]])
        segments = [self.segments_of(text) for text in frame[columns["text"]]]
        self.compile(optimizer=create_optimizer(epochs * len(frame), learning_rate),
                     loss=self.classifier.default_loss(), run_eagerly=True)  # one graph per segment count else
        order = np.random.default_rng(seed)
        losses = []
        for _ in range(epochs):
            epoch = [float(self.train_on_batch(segments[row], labels[row:row + 1]))
                     for row in order.permutation(len(frame))]
            losses.append(float(np.mean(epoch)))
        return losses

    def segments_of(self, text):
        return memory_segments(self.classifier.tokenizer, text, self.segment_length)


def memory_segments(tokenizer, text, segment_length):
    """`text` as XLNet reads it through its memory: `pieces <sep> <cls>` cut into `[1, segment_length]` input
    dicts from the start (the last one shorter), segment ids 0 and 2 for `<cls>`.

    Examples:
        >>> [segment["token_ids"].shape for segment in memory_segments(tokenizer, "A long text ...", 128)]
        [(1, 128), (1, 128), (1, 37)]
    """
    pieces = np.asarray(tokenizer.tokenize([text])[0].numpy(), "int32")
    token_ids = np.concatenate([pieces, [tokenizer.sep_token_id, tokenizer.cls_token_id]]).astype("int32")
    segment_ids = np.zeros_like(token_ids)
    segment_ids[-1] = tokenizer.packer_class.cls_segment_id
    return [{"token_ids": token_ids[None, start:start + segment_length],
             "segment_ids": segment_ids[None, start:start + segment_length],
             "padding_mask": np.ones((1, len(token_ids[start:start + segment_length])), "int32")}
            for start in range(0, len(token_ids), segment_length)]
