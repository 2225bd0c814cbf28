"""BERT pre-training examples from raw documents: sentence pairs for next-sentence prediction (BERT),
sentence-order prediction (ALBERT), or single windows of running text (RoBERTa).

Pairs are built as `create_instances_from_document` in Google's `create_pretraining_data.py` builds
them: a document's sentences are gathered into a chunk until it reaches a target length, the chunk
is cut at a sentence boundary into A and B, and half the time B is replaced by text from another
document. Masking is not done here; it belongs to the training step.

Examples:
    >>> from kerasbert.data import load_dataset
    >>> from kerasbert.families import BertTokenizer
    >>> paragraphs = load_dataset("jane_austen", "train")
    >>> chapters = paragraphs.groupby(["book", "chapter"])["text"].agg("\\n".join)
    >>> examples = pretraining_examples(chapters, BertTokenizer.from_preset("all_minilm_l6_v2_en"))
    >>> sorted(examples)
    ['next_sentence_label', 'segment_ids', 'token_ids']
"""

import os
import random

import numpy as np
import pandas as pd
import tensorflow as tf

from kerasbert.arguments import check_count, check_number
from kerasbert.data.knowledge_units import document_units, mark_units, split_joined, unit_start
from kerasbert.data.sentences import split_sentences
from kerasbert.data.text_corpus import load_text_corpus
from kerasbert.data.validation import to_dataframe, validate_text_columns
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS

NEXT_SENTENCE_TASKS = ("nsp", "sop", None)
def pretraining_examples(documents, tokenizer, max_sequence_length=128, next_sentence="nsp",
                         short_seq_prob=0.1, dupe_factor=1, seed=0, text_column="text", units_column=None):
    """Token ids of pre-training examples, in random order, drawn from `documents`.

    With `next_sentence="nsp"` (BERT), each example is `[CLS] A [SEP] B [SEP]`: sentences of one
    document are gathered until they reach the target length, A is the first 1..n-1 of them, and
    B is the rest (label 0, "IsNext") or, with probability 0.5 and always when the chunk is one
    sentence, text from a random other document (label 1, "NotNext"), in which case the sentences
    not used for B start the next chunk. The longer segment then loses tokens, each from its
    front or back at random, until the pair fits (so in a cut pair the end of A and the start of
    B need not be adjacent in the text). With `"sop"` (ALBERT), B is always the text
    that follows A (a lone long sentence is cut in two), and with probability 0.5 the two are
    swapped (label 1) or kept in order (label 0). With `None` (RoBERTa), each example is
    `[CLS] tokens [SEP]`: the document's tokens cut into consecutive windows, across sentence
    boundaries.

    The target length is `max_sequence_length` less the special tokens, but with probability
    `short_seq_prob` a random length from 2 to that, so the model also sees short inputs. Google's
    script draws it once per document; here it is drawn for each example, so that
    `short_seq_prob` is the share of examples aiming short even when documents are whole books.

    Args:
        documents: a DataFrame with one document per row in `text_column`, a Series or list of
            document strings, or the path of a text file or folder (read by `load_text_corpus`,
            one document per file). Line breaks in a document separate paragraphs.
        tokenizer: a `kerasbert.tokenizers.BertTokenizer`.
        max_sequence_length: the longest example, special tokens included (at least 5).
        next_sentence: "nsp", "sop" or None, as above.
        short_seq_prob: the probability that an example aims at a random shorter length; pass 0
            for full-length windows only, as RoBERTa trains.
        dupe_factor: how many times to go over the documents, with new random draws each time.
        seed: seeds every random draw; the same inputs and seed give the same examples.
        text_column: the DataFrame column holding the documents.
        units_column: a DataFrame column holding each document's knowledge units (entities, phrases: a list of
            strings), for ERNIE's masking (`kerasbert.data.knowledge_units`); None: no units.

    Returns:
        A dict of `token_ids` and `segment_ids` (int32 `tf.RaggedTensor`s `[examples, (length)]`;
        segment 0 is `[CLS] A [SEP]`, segment 1 is `B [SEP]`) and, unless `next_sentence` is
        None, `next_sentence_label` (int32 array `[examples]`, labelled as HF's
        `BertForPreTraining.next_sentence_label`: 0 = B follows A, 1 = not); with `units_column`, `joined`
        (int32 ragged as `token_ids`: 1 where a token continues a unit), which the masker reads.

    Examples:
        >>> examples = pretraining_examples(chapters, tokenizer, next_sentence="sop", seed=1)
        >>> tokenizer.detokenize(examples["token_ids"][0])   # '[CLS] ... [SEP] ... [SEP]'
    """
    _check_settings(max_sequence_length, next_sentence, short_seq_prob, dupe_factor)
    texts = document_texts(documents, text_column)
    units = None if units_column is None else document_units(documents, units_column)
    _check_text_and_tokenizer(texts, next_sentence, tokenizer)
    corpus = tokenize_documents(texts, tokenizer, units)
    if next_sentence == "nsp" and len(corpus) < 2:
        raise ValueError(f"Only {len(corpus)} document has tokens; next-sentence prediction needs 2 "
                         "or more. Pass more documents, or next_sentence='sop' or None.")
    rng = random.Random(seed)
    examples = []
    for _ in range(dupe_factor):
        for index, document in enumerate(corpus):
            if next_sentence is None:
                examples += _windows(document, max_sequence_length - 2, short_seq_prob, rng)
            else:
                examples += _sentence_pairs(corpus, index, max_sequence_length - 3, short_seq_prob,
                                            next_sentence, rng)
    rng.shuffle(examples)
    packed = _pack(examples, tokenizer.cls_token_id, tokenizer.sep_token_id, with_units=units is not None)
    if next_sentence is not None:
        packed["next_sentence_label"] = np.array([label for _, label in examples], dtype=np.int32)
    return packed


def document_texts(documents, text_column="text"):
    """The document strings of what `pretraining_examples` accepts, checked (the input is only read).

    Examples:
        >>> document_texts(pd.DataFrame({"text": ["One. Two.", "Three."]}))
        ['One. Two.', 'Three.']
    """
    if isinstance(documents, (str, os.PathLike)):
        if not os.path.exists(documents):
            raise FileNotFoundError(f"{str(documents)[:60]!r}: no such file or folder. A single string is "
                                    "read as a path; pass a list of document strings to use text itself.")
        documents, text_column = load_text_corpus(documents), "text"
    if not isinstance(documents, pd.DataFrame):
        documents = to_dataframe(documents, text_column=text_column)
    validate_text_columns(documents, {"text_column": text_column}, allow_empty=True)
    if documents.empty:
        raise ValueError("No documents were given. Pass at least one document string.")
    return documents[text_column].tolist()


def tokenize_documents(texts, tokenizer, units=None):
    """Each document as its sentences' WordPiece ids (lists of int), tokenised in one batched call; with `units`
    (per document, its knowledge units), their occurrences marked (`kerasbert.data.knowledge_units`).

    Sentences without tokens and documents without sentences are left out.

    Examples:
        >>> tokenize_documents(["Hello there. Bye.", ""], tokenizer)
        [[[7592, 2045, 1012], [9061, 1012]]]
    """
    documents = sentence_ids(texts, tokenizer)
    if units is not None:
        documents = mark_units(documents, units, tokenizer)
    corpus = [document for document in documents if document]
    if not corpus:
        raise ValueError(f"The tokenizer gave no tokens for any of the {len(texts)} documents. Check that "
                         "the documents hold real text and that the tokenizer suits them.")
    return corpus


def sentence_ids(texts, tokenizer):
    """For each text, its sentences' token ids (a list of lists of int; sentences without tokens left out, so
    a text without tokens gives an empty list), tokenised in one batched call.

    Examples:
        >>> sentence_ids(["Hello there. Bye.", ""], tokenizer)
        [[[7592, 2045, 1012], [9061, 1012]], []]
    """
    sentences = [split_sentences(text) for text in texts]
    flat = [sentence for document in sentences for sentence in document]
    if not flat:
        return [[] for _ in texts]
    ids = tokenizer.tokenize(flat)
    values, splits = ids.flat_values.numpy().tolist(), ids.row_splits.numpy().tolist()
    documents, first = [], 0
    for document in sentences:
        pieces = [values[splits[i]:splits[i + 1]] for i in range(first, first + len(document))]
        first += len(document)
        documents.append([sentence for sentence in pieces if sentence])
    return documents


def _check_settings(max_sequence_length, next_sentence, short_seq_prob, dupe_factor):
    if next_sentence not in NEXT_SENTENCE_TASKS:
        raise ValueError(f"next_sentence={next_sentence!r} is not supported. Use 'nsp' (BERT's next-"
                         "sentence prediction), 'sop' (ALBERT's sentence order) or None (one segment).")
    check_count("max_sequence_length", max_sequence_length, 5, hint=" [CLS] A [SEP] B [SEP] with 2 tokens of "
                "text needs 5; pass e.g. 128.")
    check_number("short_seq_prob", short_seq_prob, 0, 1)
    check_count("dupe_factor", dupe_factor, hint=" It counts the passes over the documents.")


def _check_text_and_tokenizer(texts, next_sentence, tokenizer):
    with_text = sum(bool(text.strip()) for text in texts)
    if with_text == 0:
        raise ValueError(f"The {len(texts)} documents are empty or only whitespace: there is no text to "
                         "make examples from. Pass documents with text.")
    if next_sentence == "nsp" and with_text < 2:
        raise ValueError("Next-sentence prediction draws the random B segments from other documents, "
                         f"but there are fewer than 2 non-empty documents ({len(texts)} given). Pass "
                         "more documents, or next_sentence='sop' or None.")
    if not all(hasattr(tokenizer, name) for name in ("tokenize", "cls_token_id", "sep_token_id")):
        raise TypeError(f"tokenizer must be a kerasbert BertTokenizer, got a {type(tokenizer).__name__}. "
                        "Pass e.g. BertTokenizer.from_preset('all_minilm_l6_v2_en').")


def _target_length(max_num_tokens, short_seq_prob, rng):
    """`max_num_tokens`, or with probability `short_seq_prob` a random length in [2, max_num_tokens]."""
    return rng.randint(2, max_num_tokens) if rng.random() < short_seq_prob else max_num_tokens


def _sentence_pairs(corpus, index, max_num_tokens, short_seq_prob, next_sentence, rng):
    """`((A, B), label)` for each chunk of document `index`, as Google's `create_instances_from_document`."""
    document, pairs = corpus[index], []
    chunk, length, i = [], 0, 0
    target = _target_length(max_num_tokens, short_seq_prob, rng)
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) > 1 else 1
            a, b, label = _joined(chunk[:a_end]), _joined(chunk[a_end:]), 0
            if next_sentence == "nsp" and (not b or rng.random() < 0.5):
                b, label = _random_segment(corpus, index, target - len(a), rng), 1
                i -= len(chunk) - a_end  # the sentences B did not use start the next chunk
            elif not b and len(a) > 1:  # sentence order from one sentence: its two parts
                cut = rng.randint(1, len(a) - 1)
                a, b = a[:cut], a[cut:]
            if b:
                _truncate_pair(a, b, max_num_tokens, rng)
                if next_sentence == "sop" and rng.random() < 0.5:
                    a, b, label = b, a, 1
                pairs.append(((a, b), label))
            chunk, length = [], 0
            target = _target_length(max_num_tokens, short_seq_prob, rng)
        i += 1
    return pairs


def _random_segment(corpus, index, target_length, rng):
    """Consecutive sentences of a random document other than `index`, from a random sentence on,
    until they reach `target_length` tokens (at least one sentence)."""
    other = rng.randrange(len(corpus) - 1)
    document = corpus[other + (other >= index)]
    segment = []
    for sentence in document[rng.randrange(len(document)):]:
        segment += sentence
        if len(segment) >= target_length:
            break
    return segment


def _truncate_pair(a, b, max_num_tokens, rng):
    """Shorten the longer of `a` and `b` in place, one token from its front or back at random,
    until they hold `max_num_tokens` together (Google's `truncate_seq_pair`)."""
    while len(a) + len(b) > max_num_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def _windows(document, max_num_tokens, short_seq_prob, rng):
    """The document's tokens cut into consecutive windows of a target length each (the last may
    be shorter)."""
    tokens, windows, start = _joined(document), [], 0
    while start < len(tokens):
        end = start + _target_length(max_num_tokens, short_seq_prob, rng)
        windows.append(((tokens[start:end],), None))
        start = end
    return windows


def _joined(sentences):
    return [token for sentence in sentences for token in sentence]


def _pack(examples, cls_token_id, sep_token_id, with_units=False):
    """`[CLS] A [SEP] B [SEP]` (or `[CLS] A [SEP]`) ids and segment ids as ragged int32 tensors; `with_units`, also
    the `joined` flags of the knowledge units."""
    rows = [packed([unit_start(segment) for segment in segments], cls_token_id, sep_token_id)
            for segments, _ in examples]
    lengths = np.array([len(token_ids) for token_ids, _ in rows], dtype=np.int64)
    token_ids = np.concatenate([token_ids for token_ids, _ in rows]) if rows else np.zeros(0, np.int32)
    segment_ids = np.concatenate([segments for _, segments in rows]).astype(np.int32) if rows else np.zeros(0, np.int32)
    token_ids, joined = split_joined(token_ids)
    packed_examples = {
        "token_ids": tf.RaggedTensor.from_row_lengths(token_ids, lengths),
        "segment_ids": tf.RaggedTensor.from_row_lengths(segment_ids, lengths),
    }
    if with_units:
        packed_examples["joined"] = tf.RaggedTensor.from_row_lengths(joined, lengths)
    return packed_examples


def packed(segments, cls_id, sep_id):
    """One example's `[CLS] A [SEP] (B [SEP])` ids (int32) and segment ids (int8: compact in a stream's buffer)."""
    token_ids, segment_ids = [cls_id], [0]
    for segment_id, segment in enumerate(segments):
        token_ids += [*segment, sep_id]
        segment_ids += [segment_id] * (len(segment) + 1)
    return np.array(token_ids, np.int32), np.array(segment_ids, np.int8)


def inputs_and_targets(batch):
    """A batch dict -> Keras `(inputs, targets, sample_weights)`; NSP weights are ones."""
    inputs = {name: batch[name] for name in (*PACKED_INPUTS, "mask_positions")}
    targets, weights = {"mlm": batch["mask_ids"]}, {"mlm": batch["mask_weights"]}
    if "next_sentence_label" in batch:
        targets["nsp"] = batch["next_sentence_label"]
        weights["nsp"] = tf.ones_like(batch["next_sentence_label"], tf.float32)
    return inputs, targets, weights
