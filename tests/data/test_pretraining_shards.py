"""A corpus larger than memory: raw files -> shards of tokenised documents (parallel, resumable), read back as
each process's deterministic stream (its own shards, bounded buffers, batches that continue where a run stopped)."""

import gzip
import json
import shutil
from collections import Counter

import numpy as np
import pytest

from kerasbert.data import load_dataset
from kerasbert.data.corpus_files import corpus_files, iter_documents
from kerasbert.data.pretraining_examples import sentence_ids
from kerasbert.data.pretraining_shards import ShardWriter, prepare_pretraining, read_manifest
from kerasbert.data.pretraining_stream import PretrainingStream, interleaved, records
from kerasbert.families import BertTokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer.from_preset("all_minilm_l6_v2_en")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Jane Austen's chapters in the three input formats: sentence-per-paragraph text with blank lines between
    documents, JSON Lines gzipped, and one file a document."""
    paragraphs = load_dataset("jane_austen", "train")
    chapters = paragraphs.groupby(["book", "chapter"], sort=False)["text"].agg("\n".join).tolist()[:60]
    folder = tmp_path_factory.mktemp("corpus")
    (folder / "books.txt").write_text("\n\n".join(chapter.replace("\n", " ") for chapter in chapters[:30]) + "\n",
                                      encoding="utf-8")
    with gzip.open(folder / "more.jsonl.gz", "wt", encoding="utf-8") as file:
        for chapter in chapters[30:50]:
            file.write(json.dumps({"id": len(chapter), "text": chapter}) + "\n")
    (folder / "single").mkdir()
    for index, chapter in enumerate(chapters[50:]):
        (folder / "single" / f"chapter{index}.txt").write_text(chapter, encoding="utf-8")
    return folder


def documents_of(folder, tokenizer):
    """Every document of `folder`'s files as tokenised sentences, the reference the shards must hold."""
    texts = [text for file in corpus_files(folder) for text in iter_documents(file, "blank_line")]
    return [tuple(map(tuple, sentences)) for sentences in sentence_ids(texts, tokenizer) if sentences]


def shard_documents(folder):
    manifest = read_manifest(folder)
    return [tuple(map(tuple, document)) for document in interleaved([folder / s["name"] for s in manifest["shards"]], 1)]


@pytest.fixture(scope="module")
def shards(corpus, tokenizer, tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards")
    prepare_pretraining(corpus, folder, tokenizer, document_separator="blank_line", shard_megabytes=0.02,
                        num_workers=1)
    return folder


def test_shards_hold_every_document_once_with_counts_in_the_manifest(corpus, shards, tokenizer):
    expected = documents_of(corpus, tokenizer)
    assert len(expected) == 60
    assert Counter(shard_documents(shards)) == Counter(expected)  # shuffled inside shards, nothing lost or added
    manifest = read_manifest(shards)
    assert manifest["documents"] == 60 and len(manifest["shards"]) > 6
    assert manifest["tokens"] == sum(len(sentence) for document in expected for sentence in document)
    assert manifest["tokenizer"]["class"] == "BertTokenizer" and len(manifest["tokenizer"]["fingerprint"]) == 64
    assert sum(shard["documents"] for shard in manifest["shards"]) == 60


def test_parallel_workers_write_the_same_shards(corpus, tokenizer, tmp_path):
    alone, together = tmp_path / "alone", tmp_path / "together"
    prepare_pretraining(corpus / "single", alone, tokenizer, num_workers=1)
    prepare_pretraining(corpus / "single", together, tokenizer, num_workers=2)
    assert read_manifest(alone)["shards"] == read_manifest(together)["shards"]
    for shard in read_manifest(alone)["shards"]:
        assert (together / shard["name"]).read_bytes() == (alone / shard["name"]).read_bytes(), shard["name"]


def test_a_killed_run_keeps_its_finished_shards_and_ends_as_an_uninterrupted_one(corpus, shards, tokenizer,
                                                                                tmp_path, monkeypatch):
    close = ShardWriter.close
    calls = []

    def dying_close(self, state):
        calls.append(self.part)
        if len(calls) == 4:
            raise KeyboardInterrupt("killed")  # as a kill while writing the fourth shard
        return close(self, state)

    monkeypatch.setattr(ShardWriter, "close", dying_close)
    with pytest.raises(KeyboardInterrupt):
        prepare_pretraining(corpus, tmp_path, tokenizer, document_separator="blank_line", shard_megabytes=0.02,
                            num_workers=1)
    finished = {path.name: path.stat().st_mtime_ns for path in tmp_path.glob("shard-*.tfrecord")}
    assert 0 < len(finished) < len(read_manifest(shards)["shards"]) and not (tmp_path / "manifest.json").exists()
    monkeypatch.setattr(ShardWriter, "close", close)
    manifest = prepare_pretraining(corpus, tmp_path, tokenizer, document_separator="blank_line",
                                   shard_megabytes=0.02, num_workers=1)
    assert manifest["shards"] == read_manifest(shards)["shards"]
    for name, written_at in finished.items():
        assert (tmp_path / name).stat().st_mtime_ns == written_at  # kept, not written again
    for shard in manifest["shards"]:
        assert (tmp_path / shard["name"]).read_bytes() == (shards / shard["name"]).read_bytes()


def test_bad_inputs_and_folders_are_named(corpus, shards, tokenizer, tmp_path):
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"text": "Fine."}\n{"text": "Cut off\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.jsonl, line 2: not a JSON object"):
        prepare_pretraining(broken, tmp_path / "out1", tokenizer)
    fields = tmp_path / "fields.jsonl"
    fields.write_text('{"body": "Text."}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"fields\.jsonl, line 1: no string field 'text' \(found \['body'\]\)"):
        prepare_pretraining(fields, tmp_path / "out2", tokenizer)
    with pytest.raises(ValueError, match=r"holds shards of another run \(its document_separator, inputs, .*differ\)"):
        prepare_pretraining(fields, shards, tokenizer, text_field="body")
    with pytest.raises(FileNotFoundError, match="no manifest.json"):
        PretrainingStream(tmp_path, tokenizer)
    damaged = tmp_path / "damaged"
    shutil.copytree(shards, damaged)
    first = damaged / read_manifest(shards)["shards"][0]["name"]
    first.write_bytes(first.read_bytes()[:-7])
    with pytest.raises(ValueError, match=f"{first.name} is damaged"):
        list(records(first))
    with pytest.raises(ValueError, match="was tokenised with another tokenizer"):
        PretrainingStream(shards, BertTokenizer(vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]))


def test_each_process_reads_its_own_shards_and_all_together_read_the_corpus(shards, tokenizer):
    streams = [PretrainingStream(shards, tokenizer, seed=3, num_processes=2, process_index=index) for index in (0, 1)]
    names = [set(stream.shards_of_pass(0)[0]) for stream in streams]
    all_names = {shard["name"] for shard in read_manifest(shards)["shards"]}
    assert names[0] & names[1] == set() and names[0] | names[1] == all_names
    assert streams[0].shards_of_pass(1)[0] != streams[0].shards_of_pass(0)[0]  # reshuffled each pass
    with pytest.raises(ValueError, match="process_index must be an int from 0 to 1"):
        PretrainingStream(shards, tokenizer, num_processes=2, process_index=2)


def test_fewer_shards_than_processes_split_the_documents(corpus, tokenizer, tmp_path):
    prepare_pretraining(corpus / "books.txt", tmp_path, tokenizer, document_separator="blank_line", num_workers=1)
    assert len(read_manifest(tmp_path)["shards"]) == 1  # 30 chapters in one shard, read by two processes
    halves = [[tuple(map(tuple, document)) for _, document in
               zip(range(15), PretrainingStream(tmp_path, tokenizer, num_processes=2, process_index=index).documents())]
              for index in (0, 1)]
    assert set(halves[0]) & set(halves[1]) == set()
    assert Counter(halves[0] + halves[1]) == Counter(shard_documents(tmp_path))


def test_batches_are_a_pure_function_of_the_seed_and_start_where_asked(shards, tokenizer):
    stream = PretrainingStream(shards, tokenizer, max_sequence_length=64, seed=1, example_buffer=50)
    first = [batch for _, batch in zip(range(6), stream.batches(4))]
    again = [batch for _, batch in zip(range(6), PretrainingStream(shards, tokenizer, max_sequence_length=64, seed=1,
                                                                    example_buffer=50).batches(4))]
    resumed = [batch for _, batch in zip(range(2), stream.batches(4, start=4))]
    for ours, theirs in zip(first + first[4:], again + resumed):
        for name in ours:
            np.testing.assert_array_equal(ours[name], theirs[name])
    other_seed = next(PretrainingStream(shards, tokenizer, max_sequence_length=64, seed=2).batches(4))
    assert not np.array_equal(other_seed["token_ids"][:, :8], first[0]["token_ids"][:, :8])
    labels = np.concatenate([batch["next_sentence_label"] for batch in first])
    assert 0 < labels.mean() < 1  # both IsNext and NotNext pairs
    assert first[0]["token_ids"].shape[1] <= 64
