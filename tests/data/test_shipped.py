"""The data sets shipped in datasets/: counts, columns and labels as their cards say, checksums enforced."""

import json
import shutil

import pandas as pd
import pytest

from kerasbert.data.shipped import available_datasets, datasets_dir, load_dataset

# (split -> rows) and columns, as documented in datasets/<name>/README.md
EXPECTED = {
    "uci_sentiment": ({"train": 2000, "test": 1000}, ["text", "label", "source"]),
    "jane_austen": ({"train": 9263, "test": 1035}, ["book", "chapter", "is_heading", "text"]),
    "brown_pos": ({"train": 4070, "test": 930}, ["tokens", "tags", "text", "document", "genre"]),
    "spam_assassin": ({"train": 800, "test": 200}, ["text", "label", "subject", "body_type", "id"]),
}


def test_every_shipped_set_is_known_here():
    assert available_datasets() == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_counts_and_columns(name):
    rows, columns = EXPECTED[name]
    splits = load_dataset(name)
    assert list(splits) == list(rows)
    for split, frame in splits.items():
        assert len(frame) == rows[split], split
        assert frame.columns.tolist() == columns
        assert frame.notna().all().all()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_card_lists_every_checksum_and_count(name):
    folder = datasets_dir() / name
    card = (folder / "README.md").read_text(encoding="utf-8")
    manifest = json.loads((folder / "manifest.json").read_text())
    for entry in manifest["splits"].values():
        assert entry["sha256"] in card
        assert f"{entry['rows']:,}" in card
        assert entry["bytes"] < 5 * 2**20
    assert (folder / "prepare.py").is_file()


def test_uci_sentiment_is_balanced_per_source():
    splits = load_dataset("uci_sentiment")
    assert set(splits["train"].source) == {"amazon", "yelp"}
    assert set(splits["test"].source) == {"imdb"}
    for frame in splits.values():
        counts = frame.groupby(["source", "label"]).size()
        assert set(counts) == {500}
    assert load_dataset("uci_sentiment", "test").text[0].startswith("A very, very, very slow-moving")


def test_jane_austen_chapters_and_headings():
    splits = load_dataset("jane_austen")
    assert set(splits["test"].book) == {"Persuasion"}
    assert "Persuasion" not in set(splits["train"].book)
    chapters = {book: frame.chapter.max() for split in splits.values()
                for book, frame in split.groupby("book")}
    assert chapters == {"Sense & Sensibility": 50, "Pride & Prejudice": 61, "Mansfield Park": 48,
                        "Emma": 55, "Northanger Abbey": 31, "Persuasion": 24}
    test = splits["test"]
    headings = test[test.is_heading]
    assert headings.text.tolist() == [f"Chapter {n}" for n in range(1, 25)]
    assert headings.chapter.tolist() == list(range(1, 25))
    first = test[~test.is_heading & (test.chapter == 1)].text.iloc[0]
    assert first.startswith("Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man who,")
    assert "\n" not in "".join(test.text)


def test_brown_pos_sample_is_split_by_document():
    splits = load_dataset("brown_pos")
    train, test = splits["train"], splits["test"]
    assert not set(train.document) & set(test.document)
    assert test.document.str[2:].astype(int).mod(5).eq(0).all()
    assert set(train.genre) == set(test.genre) and len(set(test.genre)) == 15
    for frame in splits.values():
        assert frame.groupby("document").size().eq(10).all()
        assert (frame.tokens.str.len() == frame.tags.str.len()).all()
    first = train.iloc[0]
    assert first.tokens[:3] == ["The", "Fulton", "County"] and first.tags[:3] == ["at", "np-tl", "nn-tl"]
    assert 'produced "no evidence" that' in first.text


def test_spam_assassin_is_balanced_long_text():
    splits = load_dataset("spam_assassin")
    assert splits["train"].label.value_counts().to_dict() == {"spam": 400, "ham": 400}
    assert splits["test"].label.value_counts().to_dict() == {"spam": 100, "ham": 100}
    emails = pd.concat(splits.values())
    assert emails.id.is_unique and emails.text.is_unique
    assert (emails.label == "spam").eq(emails.id.str.startswith("spam")).all()
    assert set(emails.body_type) == {"text/plain", "text/html"}
    assert (emails.text.str.len() > 0).all() and (emails.text.str.len() > 2000).sum() > 150
    converted = emails[emails.body_type == "text/html"].text
    assert not converted.str.contains(r"<(?:html|body|p|br|font|td)\b", case=False).any()


def test_one_split_is_a_frame():
    frame = load_dataset("uci_sentiment", split="test")
    assert len(frame) == 1000


def test_unknown_name_lists_the_available_sets():
    with pytest.raises(ValueError, match="Available: .*uci_sentiment"):
        load_dataset("imdb_reviews")


def test_unknown_split_lists_the_splits():
    with pytest.raises(ValueError, match="Splits: train, test"):
        load_dataset("uci_sentiment", split="validation")


@pytest.fixture
def copied_sets(tmp_path, monkeypatch):
    """A copy of datasets/ in tmp_path, selected with KERASBERT_DATASETS."""
    copy = tmp_path / "datasets"
    shutil.copytree(datasets_dir(), copy)
    monkeypatch.setenv("KERASBERT_DATASETS", str(copy))
    return copy


def test_corrupted_copy_names_the_file_and_the_fix(copied_sets):
    path = copied_sets / "uci_sentiment" / "test.jsonl"
    path.write_bytes(path.read_bytes().replace(b'"label":0', b'"label":1', 1))
    with pytest.raises(ValueError, match=r"test\.jsonl is corrupt.*prepare\.py"):
        load_dataset("uci_sentiment", split="test")
    assert len(load_dataset("uci_sentiment", split="train")) == 2000


def test_missing_file_names_the_file_and_the_fix(copied_sets):
    (copied_sets / "uci_sentiment" / "train.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match=r"train\.jsonl is missing.*prepare\.py"):
        load_dataset("uci_sentiment")


def test_missing_folder_says_how_to_point_at_one(tmp_path, monkeypatch):
    monkeypatch.setenv("KERASBERT_DATASETS", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="KERASBERT_DATASETS"):
        load_dataset("uci_sentiment")
