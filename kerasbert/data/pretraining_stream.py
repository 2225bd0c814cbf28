"""Pre-training examples streamed from the shards `prepare_pretraining` wrote, as TF Model Garden's input reader:
each pass over the corpus shuffles the shard order with a seed all processes share and gives each process its own
shards (with fewer shards than processes, every process reads them all and keeps every n-th document); a process
interleaves `cycle_length` shards, shuffles documents in a bounded buffer, draws next-sentence pairs (or windows)
from each document as `pretraining_examples` does, the random B segments from the other buffered documents, and
shuffles the examples in a second bounded buffer. Masks are drawn per batch from `(seed, batch number)`.

The stream is endless (pass after pass) and a pure function of the seed and the process's share, so batch `n` is
the same in every run: `start=n` continues a stopped run exactly where it was (the examples before it are built
again, without tokenising or masking: a few seconds per million). Memory is bounded by the two buffers.

Examples:
    >>> stream = PretrainingStream("corpus_shards", tokenizer, max_sequence_length=128, seed=0)
    >>> dataset = stream.dataset(batch_size=32, masker=pretrainer.masker(seed=0))
"""

import itertools
import random
from pathlib import Path

import numpy as np
import tensorflow as tf

from kerasbert.arguments import check_count, check_number
from kerasbert.data.batching import length_buckets
from kerasbert.data.pretraining_examples import (
    NEXT_SENTENCE_TASKS,
    _sentence_pairs,
    _windows,
    inputs_and_targets,
    packed,
)
from kerasbert.data.pretraining_shards import read_manifest, tokenizer_identity


class PretrainingStream:
    """The endless example stream of one process over a shard folder (see the module docstring).

    Args:
        folder: a folder written by `prepare_pretraining`.
        tokenizer: the model's tokenizer; it must be the one the shards were written with.
        max_sequence_length, next_sentence, short_seq_prob: as `pretraining_examples`.
        seed: the shard order of each pass, the buffers' shuffles, the pairs' random draws.
        num_processes, process_index: this process's share of the corpus.
        cycle_length: shards read side by side.
        document_buffer, example_buffer: the shuffle buffers' sizes (documents, examples).
    """

    def __init__(self, folder, tokenizer, max_sequence_length=128, next_sentence="nsp", short_seq_prob=0.1, seed=0,
                 num_processes=1, process_index=0, cycle_length=4, document_buffer=1000, example_buffer=10_000):
        self.folder = Path(folder)
        self.manifest = read_manifest(folder)
        identity = tokenizer_identity(tokenizer)
        if identity["fingerprint"] != self.manifest["tokenizer"]["fingerprint"]:
            raise ValueError(f"{folder} was tokenised with another tokenizer ({self.manifest['tokenizer']['class']}, "
                             f"{self.manifest['tokenizer']['vocabulary_size']} tokens) than this model's "
                             f"({identity['class']}, {identity['vocabulary_size']}): prepare the shards again with "
                             "the model's tokenizer.")
        if next_sentence not in NEXT_SENTENCE_TASKS:
            raise ValueError(f"next_sentence={next_sentence!r} is not supported; use 'nsp', 'sop' or None.")
        check_count("max_sequence_length", max_sequence_length, 5)
        check_number("short_seq_prob", short_seq_prob, 0, 1)
        check_count("num_processes", num_processes)
        check_count("process_index", process_index, 0, num_processes - 1,
                    hint=f" Processes are numbered 0 to {num_processes - 1}.")
        for name, value in [("cycle_length", cycle_length), ("document_buffer", document_buffer),
                            ("example_buffer", example_buffer)]:
            check_count(name, value)
        needed = 2 if next_sentence == "nsp" else 1
        if self.manifest["documents"] < needed * num_processes:
            raise ValueError(f"{folder} holds {self.manifest['documents']} documents for {num_processes} processes: "
                             f"each needs {needed} at least{' (next-sentence B segments come from other documents)' if needed == 2 else ''}. "
                             "Add documents, or use fewer processes.")
        if next_sentence == "nsp" and document_buffer < 2:
            raise ValueError("document_buffer must be 2 or more with next-sentence prediction (B segments are drawn "
                             "from the other buffered documents).")
        self.tokenizer = tokenizer
        self.max_sequence_length, self.next_sentence, self.short_seq_prob = max_sequence_length, next_sentence, short_seq_prob
        self.seed, self.num_processes, self.process_index = seed, num_processes, process_index
        self.cycle_length, self.document_buffer, self.example_buffer = cycle_length, document_buffer, example_buffer

    # === Documents ===

    def shards_of_pass(self, number):
        """This process's shards in pass `number`, and whether it keeps every n-th document of them (fewer shards
        than processes) rather than whole shards."""
        names = [shard["name"] for shard in self.manifest["shards"]]
        random.Random(f"{self.seed}-pass-{number}").shuffle(names)
        if len(names) >= self.num_processes:
            return names[self.process_index::self.num_processes], False
        return names, True

    def documents(self):
        """This process's documents, pass after pass: each a list of sentences (lists of token ids)."""
        for number in itertools.count():
            names, by_document = self.shards_of_pass(number)
            for position, document in enumerate(interleaved([self.folder / name for name in names],
                                                            self.cycle_length)):
                if not by_document or position % self.num_processes == self.process_index:
                    yield document

    # === Examples ===

    def examples(self):
        """Packed examples `(token_ids, segment_ids, label)`, endless (label None without a sentence task)."""
        rng = random.Random(f"{self.seed}-process-{self.process_index}")
        documents = self.documents()
        share = -(-self.manifest["documents"] // self.num_processes)  # about one pass: no document twice in the pool
        pool = list(itertools.islice(documents, min(self.document_buffer, max(share, 2))))
        buffer = []
        cls_id, sep_id = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        while True:
            index = rng.randrange(len(pool))
            if self.next_sentence is None:
                drawn = _windows(pool[index], self.max_sequence_length - 2, self.short_seq_prob, rng)
            else:
                drawn = _sentence_pairs(pool, index, self.max_sequence_length - 3, self.short_seq_prob,
                                        self.next_sentence, rng)
            pool[index] = next(documents)
            for segments, label in drawn:
                buffer.append((packed(segments, cls_id, sep_id), label))
                if len(buffer) >= self.example_buffer:
                    chosen = rng.randrange(len(buffer))
                    buffer[chosen], buffer[-1] = buffer[-1], buffer[chosen]
                    (token_ids, segment_ids), label = buffer.pop()
                    yield token_ids, segment_ids, label

    def batches(self, batch_size, start=0):
        """Padded numpy batches from batch number `start` on (the examples before it are drawn and dropped)."""
        examples = self.examples()
        for _ in range(start * batch_size):
            next(examples)
        buckets = length_buckets(self.max_sequence_length)
        pad_id = self.tokenizer.pad_token_id
        while True:
            rows = list(itertools.islice(examples, batch_size))
            length = next(bucket for bucket in buckets if bucket >= max(len(ids) for ids, _, _ in rows))
            token_ids = np.full((batch_size, length), pad_id, np.int32)
            segment_ids = np.zeros((batch_size, length), np.int32)
            padding_mask = np.zeros((batch_size, length), np.int32)
            for row, (ids, segments, _) in enumerate(rows):
                token_ids[row, :len(ids)], segment_ids[row, :len(ids)], padding_mask[row, :len(ids)] = ids, segments, 1
            batch = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
            if self.next_sentence is not None:
                batch["next_sentence_label"] = np.array([label for _, _, label in rows], np.int32)
            yield batch

    def dataset(self, batch_size, masker, start=0):
        """A `tf.data.Dataset` of masked batches from batch number `start` on, as `BertPretrainer` trains on:
        batch n masked with the stateless seed `(masker.seed, n)`."""
        check_count("batch_size", batch_size)
        check_count("start", start, 0)
        signature = {name: tf.TensorSpec([batch_size, None], tf.int32)
                     for name in ("token_ids", "segment_ids", "padding_mask")}
        if self.next_sentence is not None:
            signature["next_sentence_label"] = tf.TensorSpec([batch_size], tf.int32)
        dataset = tf.data.Dataset.from_generator(lambda: self.batches(batch_size, start), output_signature=signature)
        seed = masker.seed or 0

        def masked(number, batch):
            return {**batch, **masker.with_seed(batch["token_ids"], tf.stack([tf.constant(seed, tf.int64), number]))}

        dataset = dataset.enumerate(start=start).map(masked)
        return dataset.map(inputs_and_targets).prefetch(tf.data.AUTOTUNE)

    def estimated_batches_per_pass(self, batch_size):
        """About how many batches one pass over this process's share makes (its tokens over the mean example)."""
        special = 2 if self.next_sentence is None else 3
        mean_target = (self.max_sequence_length - special) * (1 - self.short_seq_prob / 2)
        examples = self.manifest["tokens"] / self.num_processes / mean_target
        return max(1, int(examples // batch_size))


def interleaved(paths, cycle_length):
    """The documents of the shard files `paths`, `cycle_length` files read in turn, one record each (a file
    that ends gives its place to the next), as `tf.data.Dataset.interleave(..., block_length=1)`."""
    pending = iter(paths)
    open_files = [records(path) for path in itertools.islice(pending, cycle_length)]
    while open_files:
        for reader in list(open_files):
            document = next(reader, None)
            if document is None:
                following = next(pending, None)
                if following is None:
                    open_files.remove(reader)
                else:
                    open_files[open_files.index(reader)] = records(following)
                continue
            yield document


def records(path):
    """The documents of one shard, each a `ShardDocument`."""
    for record in record_bytes(path):
        features = tf.train.Example.FromString(record).features.feature
        yield ShardDocument(np.array(features["token_ids"].int64_list.value, np.int32),
                            features["sentence_lengths"].int64_list.value)


class ShardDocument:
    """A document's sentences as one int32 array (4 bytes a token, a tenth of Python lists of ints); a sentence
    (`document[i]`) or a run of them (`document[i:]`) comes out as Python lists, as `pretraining_examples` takes.

    Examples:
        >>> document = ShardDocument(np.array([7, 8, 9], np.int32), [2, 1])
        >>> len(document), document[1], document[0:]
        (2, [9], [[7, 8], [9]])
    """

    def __init__(self, tokens, sentence_lengths):
        self.tokens = tokens
        self.starts = np.concatenate([[0], np.cumsum(sentence_lengths, dtype=np.int64)])

    def __len__(self):
        return len(self.starts) - 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        return self.tokens[self.starts[index]:self.starts[index + 1]].tolist()

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def record_bytes(path):
    """The records of a TFRecord file (their checksums verified), with TensorFlow's plain iterator: a
    `tf.data.TFRecordDataset` costs about 40 ms to start, which a stream opening many small shards feels."""
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")  # its deprecation note points to tf.data, slower here
    try:
        iterator = tf.compat.v1.io.tf_record_iterator(str(path))
    finally:
        logger.setLevel(level)
    try:
        yield from iterator
    except tf.errors.DataLossError as error:
        raise ValueError(f"{path} is damaged ({error.message.splitlines()[0]}): prepare the shards again.") from None
