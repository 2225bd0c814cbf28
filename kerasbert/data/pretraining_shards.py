"""A pre-training corpus larger than memory: raw text files -> shards of tokenised documents, written in parallel
with bounded memory, resumable after a kill; `PretrainingStream` reads them back.

Each input file becomes shards `shard-FFFFF-KKKK.tfrecord` (file F, part K) of about `shard_megabytes` each: one
`tf.train.Example` a document, its sentences' token ids flat in `token_ids` and their lengths in
`sentence_lengths` (sentences as `split_sentences` cuts them: next-sentence pairs are drawn at read time). A shard's
documents are shuffled with `seed` (the input file order is often sorted: titles, dates). `manifest.json`, written
last, lists every shard with its document and token counts, the tokenizer's fingerprint, the seed and the inputs.

Memory per worker: one shard's records (`shard_megabytes`) and a batch of documents being tokenised. A kill loses at
most the shard being written: a run again with the same arguments keeps the finished shards (each file's progress
is recorded after every shard) and skips the documents they hold.

Examples:
    >>> manifest = prepare_pretraining(["wiki/", "books.jsonl.gz"], "corpus_shards", tokenizer, num_workers=8)
    >>> manifest["documents"], manifest["tokens"], len(manifest["shards"])
    (6458670, 3316846011, 412)
"""

import hashlib
import json
import multiprocessing
import os
import random
from pathlib import Path

import tensorflow as tf

from kerasbert.arguments import check_count, check_number
from kerasbert.atomic_files import atomic_path
from kerasbert.data.corpus_files import checked_separator, corpus_files, iter_documents
from kerasbert.data.pretraining_examples import sentence_ids

FORMAT = "kerasbert-pretraining-shards"
MANIFEST = "manifest.json"
PLAN = "plan.json"
TOKENIZE_BATCH_CHARACTERS = 1 << 20  # texts tokenised together (one TensorFlow call)


def prepare_pretraining(inputs, output_dir, tokenizer, *, shard_megabytes=64, num_workers=None, seed=0,
                        document_separator="file", text_field="text", pattern="*"):
    """Tokenise raw text into shards under `output_dir` (see the module docstring); returns the manifest.

    Args:
        inputs: a file or folder, or a list of them: plain text (`.gz` too; see `document_separator`) and JSON
            Lines (`.jsonl`, `.jsonl.gz`, the text in `text_field`). Folders are searched for `pattern`.
        output_dir: the shards' folder (created). Running again on the same folder with the same arguments
            finishes an interrupted run; other inputs or another tokenizer there are refused.
        tokenizer: a kerasbert tokenizer (the model's: `pretrainer.tokenizer`).
        shard_megabytes: the size a shard is closed at (its records, about 2-3 bytes a token).
        num_workers: processes tokenising files side by side (default: the CPU count); 1 runs here.
        seed: seeds the shuffle of the documents inside each shard.

    Examples:
        >>> prepare_pretraining("austen/", "austen_shards", BertTokenizer.from_preset("all_minilm_l6_v2_en"))
    """
    files = corpus_files(inputs, pattern)
    checked_separator(document_separator)
    check_number("shard_megabytes", shard_megabytes, 0, low_open=True, hint=" e.g. 64.")
    check_count("seed", seed, 0)
    if num_workers is not None:
        check_count("num_workers", num_workers)
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    plan = {"format": FORMAT, "version": 1, "tokenizer": tokenizer_identity(tokenizer), "seed": seed,
            "shard_megabytes": shard_megabytes, "text_field": text_field,
            "document_separator": document_separator if isinstance(document_separator, str) else document_separator.pattern,
            "inputs": [{"path": str(file.resolve()), "bytes": file.stat().st_size} for file in files]}
    claim_folder(output, plan)
    jobs = [(index, file, output, plan, document_separator) for index, file in enumerate(files)
            if not progress(output, index).get("complete")]
    workers = min(num_workers or os.cpu_count() or 1, len(jobs))
    if workers <= 1:
        for job in jobs:
            write_file_shards(job, tokenizer)
    else:  # each worker receives the tokenizer once (a new copy per file would trace its graph again)
        with multiprocessing.get_context("spawn").Pool(workers, initializer=keep_worker_tokenizer,
                                                       initargs=(tokenizer,)) as pool:
            for _ in pool.imap_unordered(write_file_shards, jobs):
                pass
    shards = [shard for index in range(len(files)) for shard in progress(output, index)["shards"]]
    manifest = {**plan, "shards": shards, "documents": sum(shard["documents"] for shard in shards),
                "tokens": sum(shard["tokens"] for shard in shards)}
    if not manifest["documents"]:
        raise ValueError(f"The {len(files)} input files hold no document with tokens: nothing to pre-train on.")
    write_json(output / MANIFEST, manifest)
    return manifest


def tokenizer_identity(tokenizer):
    """The tokenizer's class and a fingerprint of its vocabulary and settings: shards are only read by a model
    whose tokenizer has the same fingerprint."""
    if not all(hasattr(tokenizer, name) for name in ("tokenize", "get_vocabulary", "get_config")):
        raise TypeError(f"tokenizer must be a kerasbert tokenizer, got a {type(tokenizer).__name__}. Pass e.g. "
                        "BertTokenizer.from_preset('all_minilm_l6_v2_en').")
    settings = {key: value for key, value in tokenizer.get_config().items() if key not in ("name", "trainable", "dtype")}
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    digest.update("\n".join(tokenizer.get_vocabulary()).encode())
    return {"class": type(tokenizer).__name__, "vocabulary_size": len(tokenizer.get_vocabulary()),
            "fingerprint": digest.hexdigest()}


def claim_folder(output, plan):
    """Record `plan` in `output`, or check that the run recorded there had the same one (resuming it)."""
    recorded = output / PLAN
    if recorded.exists():
        previous = json.loads(recorded.read_text(encoding="utf-8"))
        if previous != plan:
            changed = sorted(key for key in plan if previous.get(key) != plan[key])
            raise ValueError(f"{output} holds shards of another run (its {', '.join(changed)} differ). Use a new "
                             "output folder, or delete this one to start again.")
    elif any(output.iterdir()):
        raise ValueError(f"{output} is not empty and holds no {PLAN}: give a new or empty output folder.")
    else:
        write_json(recorded, plan)
    for leftover in output.glob(".*.partial-*"):  # a killed run's unfinished shard
        leftover.unlink()


def progress_path(output, index):
    return output / f"progress-{index:05d}.json"


def progress(output, index):
    """Input file `index`'s finished shards, the documents they hold and whether the file is done."""
    path = progress_path(output, index)
    if not path.exists():
        return {"shards": [], "documents_read": 0, "complete": False}
    return json.loads(path.read_text(encoding="utf-8"))


WORKER_TOKENIZER = []  # in a worker process: the tokenizer `keep_worker_tokenizer` received


def keep_worker_tokenizer(tokenizer):
    WORKER_TOKENIZER.append(tokenizer)


def write_file_shards(job, tokenizer=None):
    """Tokenise one input file into its shards, continuing after the shards a previous run finished."""
    index, file, output, plan, document_separator = job
    tokenizer = tokenizer or WORKER_TOKENIZER[0]
    state = progress(output, index)
    documents = iter_documents(file, document_separator, plan["text_field"])
    for _ in range(state["documents_read"]):  # the documents of finished shards
        next(documents)
    shard, texts, characters = ShardWriter(output, index, len(state["shards"]), plan["seed"]), [], 0
    for text in documents:
        texts.append(text)
        characters += len(text)
        if characters >= TOKENIZE_BATCH_CHARACTERS:
            state = shard.add(sentence_ids(texts, tokenizer), len(texts), state, plan["shard_megabytes"])
            texts, characters = [], 0
    if texts:
        state = shard.add(sentence_ids(texts, tokenizer), len(texts), state, plan["shard_megabytes"])
    state = shard.close(state)
    write_json(progress_path(output, index), {**state, "complete": True})


class ShardWriter:
    """Serialised documents of the shard being filled; written (shuffled) and recorded when full."""

    def __init__(self, output, file_index, part, seed):
        self.output, self.file_index, self.part, self.seed = output, file_index, part, seed
        self.records, self.bytes, self.tokens, self.read = [], 0, 0, 0

    def add(self, documents, texts_read, state, shard_megabytes):
        for sentences in documents:
            if sentences:
                record = tf.train.Example(features=tf.train.Features(feature={
                    "token_ids": tf.train.Feature(int64_list=tf.train.Int64List(
                        value=[token for sentence in sentences for token in sentence])),
                    "sentence_lengths": tf.train.Feature(int64_list=tf.train.Int64List(
                        value=[len(sentence) for sentence in sentences])),
                })).SerializeToString(deterministic=True)  # map fields in a fixed order
                self.records.append(record)
                self.bytes += len(record)
                self.tokens += sum(map(len, sentences))
        self.read += texts_read
        if self.bytes >= shard_megabytes * 1e6:
            return self.close(state)
        return state

    def close(self, state):
        """Write the shard (if it holds documents) and the file's progress; start the next shard."""
        if self.records:
            name = f"shard-{self.file_index:05d}-{self.part:04d}.tfrecord"
            random.Random(f"{self.seed}-{name}").shuffle(self.records)
            with atomic_path(self.output / name) as temporary:
                with tf.io.TFRecordWriter(str(temporary)) as writer:
                    for record in self.records:
                        writer.write(record)
            state = {**state, "shards": [*state["shards"], {"name": name, "documents": len(self.records),
                                                            "tokens": self.tokens}]}
            self.part += 1
        state = {**state, "documents_read": state["documents_read"] + self.read}
        write_json(progress_path(self.output, self.file_index), state)
        self.records, self.bytes, self.tokens, self.read = [], 0, 0, 0
        return state


def write_json(path, value):
    with atomic_path(path) as temporary:
        temporary.write_text(json.dumps(value, indent=1), encoding="utf-8")


def read_manifest(folder):
    """The manifest of a shard folder written by `prepare_pretraining`, checked to be complete."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        hint = " (its run did not finish: run prepare_pretraining again)" if (Path(folder) / PLAN).exists() else ""
        raise FileNotFoundError(f"{folder}: no {MANIFEST}{hint}. Shards come from kerasbert prepare-pretraining.")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is damaged ({error.msg}): run prepare_pretraining again.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"{path} is not a kerasbert shard manifest (format {FORMAT!r}).")
    missing = [shard["name"] for shard in manifest["shards"] if not (Path(folder) / shard["name"]).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder}: {len(missing)} shards of the manifest are missing, e.g. {missing[0]}.")
    return manifest


def is_shard_folder(data):
    """Whether `data` is the path of a folder `prepare_pretraining` wrote."""
    return isinstance(data, (str, os.PathLike)) and (Path(data) / MANIFEST).is_file()
