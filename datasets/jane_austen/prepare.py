"""Build datasets/jane_austen from Debian `r-cran-janeaustenr` 1.0.0-1, without R.
Run: `pip install rdata==1.1.0 && python datasets/jane_austen/prepare.py` (needs apt-get and dpkg).

The package stores the six novels as character vectors, one line of text per element, in R's lazy-load
database `data/Rdata.rdb`. Its index is `data/Rdata.rdx`, an RDS list that maps each variable to an
(offset, length) pair. Each record is a 4-byte big-endian uncompressed size followed by a zlib stream
that holds one serialised R object. Lines are grouped into paragraphs at blank lines.
"""

import re
import struct
import sys
import tempfile
import zlib
from pathlib import Path

import rdata

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _prepare import fetch_deb, write_dataset  # noqa: E402

PACKAGE = "r-cran-janeaustenr"
DEB_SHA256 = "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95"
DATA = "usr/lib/R/site-library/janeaustenr/data/Rdata"
# R variable -> title, in publication order (the order of janeaustenr::austen_books()).
BOOKS = {"sensesensibility": "Sense & Sensibility", "prideprejudice": "Pride & Prejudice",
         "mansfieldpark": "Mansfield Park", "emma": "Emma",
         "northangerabbey": "Northanger Abbey", "persuasion": "Persuasion"}
TEST_BOOKS = {"Persuasion"}
CHAPTER = re.compile(r"chapter (\d+|[ivxlc]+)", re.IGNORECASE)
VOLUME = re.compile(r"volume [ivx]+", re.IGNORECASE)


def read_lazyload(stem):
    """{variable: R object converted to Python} from an R lazy-load database `stem`.rdb/.rdx."""
    index = rdata.read_rds(f"{stem}.rdx")
    if not index["compressed"][0]:
        raise ValueError(f"{stem}.rdx: expected a zlib-compressed database")
    blob = Path(f"{stem}.rdb").read_bytes()
    objects = {}
    for name, (offset, length) in index["variables"].items():
        record = blob[offset:offset + length]
        (size,) = struct.unpack(">I", record[:4])
        raw = zlib.decompress(record[4:])
        if len(raw) != size:
            raise ValueError(f"{stem}.rdb: {name} is {len(raw)} bytes, its header says {size}")
        objects[str(name)] = rdata.conversion.convert(rdata.parser.parse_data(raw, extension=".rds"))
    return objects


def paragraphs(lines):
    """Yield (chapter, is_heading, text) for each blank-line-separated paragraph of a novel."""
    chapter, block = 0, []
    for line in [*lines, ""]:
        if line.strip():
            block.append(line.strip())
            continue
        if not block:
            continue
        text, block = " ".join(block), []
        is_heading = bool(CHAPTER.fullmatch(text) or VOLUME.fullmatch(text))
        if CHAPTER.fullmatch(text):
            chapter += 1
        yield chapter, is_heading, text


def main():
    with tempfile.TemporaryDirectory() as tmp:
        novels = read_lazyload(fetch_deb(PACKAGE, DEB_SHA256, tmp) / DATA)
    splits = {"train": [], "test": []}
    for variable, book in BOOKS.items():
        split = "test" if book in TEST_BOOKS else "train"
        splits[split] += [{"book": book, "chapter": chapter, "is_heading": is_heading, "text": text}
                          for chapter, is_heading, text in paragraphs(str(x) for x in novels[variable])]
    write_dataset(HERE, splits, source=f"Debian {PACKAGE} 1.0.0-1")


if __name__ == "__main__":
    main()
