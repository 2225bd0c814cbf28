"""Build SWAG-format multiple-choice examples from running prose: which sentence comes next?

Each example is a sentence (`context`), and as `endings` its true next sentence among sentences
drawn at random from the same book; `label` is the position of the true one. The rows have the
columns `load_swag` gives (`context`, `endings`, `label`), so `BertMultipleChoice` reads them as is.

Sentences are split by one deterministic rule (`split_sentences`), and everything random is drawn
from one `numpy.random.default_rng(seed)`: the same paragraphs and seed give the same examples.

Examples:
    >>> from kerasbert.data.shipped import load_dataset
    >>> test = next_sentence_examples(load_dataset("jane_austen", "test"), 1000, seed=0)
    >>> test.columns.tolist()
    ['context', 'endings', 'label', 'book', 'chapter']
"""

import numpy as np
import pandas as pd

from kerasbert.data.sentences import split_sentences


def book_sentences(paragraphs, min_words=4, max_words=60):
    """Sentences of each paragraph of prose, with their place.

    Chapter headings (`is_heading`) and the front matter before the first chapter (`chapter` 0)
    are skipped; sentences with fewer than `min_words` or more than `max_words` words (split on
    whitespace) are dropped.

    Returns:
        A DataFrame of `book`, `chapter`, `paragraph` (the row label in `paragraphs`),
        `position` (the sentence's place in its paragraph, counting dropped ones) and `text`.
    """
    rows = []
    prose = paragraphs[~paragraphs["is_heading"] & (paragraphs["chapter"] > 0)]
    for label, book, chapter, text in zip(prose.index, prose["book"], prose["chapter"], prose["text"]):
        for position, sentence in enumerate(split_sentences(text)):
            if min_words <= len(sentence.split()) <= max_words:
                rows.append((book, chapter, label, position, sentence))
    return pd.DataFrame(rows, columns=["book", "chapter", "paragraph", "position", "text"])


def next_sentence_examples(paragraphs, num_examples, num_choices=4, seed=0, min_words=4, max_words=60):
    """Draw `num_examples` "which sentence comes next" questions from `paragraphs`.

    A candidate pair is two consecutive sentences of one paragraph, both kept by `book_sentences`.
    `num_examples` pairs are drawn without replacement and kept in reading order. Each gets
    `num_choices - 1` distractors: distinct sentences drawn at random from the same book whose
    text differs from both sentences of the pair. The true next sentence goes to a random position.

    Args:
        paragraphs: one row per paragraph with `book`, `chapter`, `is_heading` and `text`, as
            `load_dataset("jane_austen", split)` returns.
        num_examples: how many examples to draw.
        num_choices: endings per example (the true one included), at least 2.
        seed: seeds every random draw.
        min_words, max_words: the sentence lengths kept, in whitespace-separated words.

    Returns:
        A DataFrame of `context` (str), `endings` (list of `num_choices` str), `label` (int, the
        index of the true next sentence in `endings`), `book` and `chapter`.

    Examples:
        >>> train = next_sentence_examples(load_dataset("jane_austen", "train"), 4000, seed=0)
        >>> row = train.iloc[0]
        >>> row.endings[row.label]        # the sentence that follows row.context in the novel
    """
    if num_choices < 2:
        raise ValueError(f"num_choices must be at least 2 (the true ending and a distractor), "
                         f"got {num_choices}.")
    sentences = book_sentences(paragraphs, min_words, max_words)
    follows = (sentences["paragraph"].shift(-1) == sentences["paragraph"]) & (
        sentences["position"].shift(-1) == sentences["position"] + 1)
    pairs = np.flatnonzero(follows.to_numpy())
    if len(pairs) < num_examples:
        raise ValueError(f"Only {len(pairs)} pairs of consecutive sentences of {min_words}-{max_words} words "
                         f"were found, fewer than num_examples={num_examples}. Ask for fewer examples or "
                         "pass more paragraphs.")
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(pairs, size=num_examples, replace=False))
    texts = sentences["text"].to_numpy()
    books = sentences["book"].to_numpy()
    pools = {book: np.flatnonzero(books == book) for book in sentences["book"].unique()}
    for book, pool in pools.items():
        if len(set(texts[pool])) < num_choices + 1:
            raise ValueError(f"{book!r} has {len(set(texts[pool]))} distinct sentences, too few to draw "
                             f"{num_choices - 1} distractors besides a context and its next sentence.")
    rows = []
    for i in chosen:
        context, true_ending, book = texts[i], texts[i + 1], books[i]
        endings = draw_distractors(rng, texts, pools[book], num_choices - 1, exclude={context, true_ending})
        label = int(rng.integers(num_choices))
        endings.insert(label, true_ending)
        rows.append((context, endings, label, book, int(sentences.at[i, "chapter"])))
    return pd.DataFrame(rows, columns=["context", "endings", "label", "book", "chapter"])


def draw_distractors(rng, texts, pool, count, exclude):
    """`count` distinct texts drawn at random from `texts[pool]`, none of them in `exclude`
    (the pool must hold at least `count` such texts)."""
    drawn = []
    while len(drawn) < count:
        text = texts[pool[rng.integers(len(pool))]]
        if text not in exclude and text not in drawn:
            drawn.append(text)
    return drawn
