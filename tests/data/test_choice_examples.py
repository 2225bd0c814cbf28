"""Next-sentence multiple-choice examples from the shipped Austen novels: the rule, the draws, determinism."""

import pandas as pd
import pytest

from kerasbert.data.choice_examples import book_sentences, next_sentence_examples
from kerasbert.data.sentences import split_sentences
from kerasbert.data.shipped import load_dataset


@pytest.fixture(scope="module")
def persuasion():
    return load_dataset("jane_austen", "test")


def test_sentence_rule():
    assert split_sentences('Mr. Darcy bowed. "Indeed!" said she. Mrs. Bennet  smiled.') == [
        "Mr. Darcy bowed.", '"Indeed!" said she.', "Mrs. Bennet smiled."]
    assert split_sentences('"Where, pray?" She laughed. "You are right." "I know it."') == [
        '"Where, pray?"', "She laughed.", '"You are right."', '"I know it."']
    assert split_sentences("It was F. Wentworth. Ten (10) came? no, none did.") == [
        "It was F. Wentworth.", "Ten (10) came? no, none did."]


def test_sentences_skip_headings_and_front_matter_and_keep_the_length_range(persuasion):
    sentences = book_sentences(persuasion, min_words=4, max_words=60)
    words = sentences["text"].str.split().map(len)
    assert words.between(4, 60).all()
    assert not sentences["text"].str.fullmatch(r"(?i)chapter \w+").any()
    assert (sentences["chapter"] > 0).all()
    assert set(sentences["paragraph"]) <= set(persuasion.index[~persuasion["is_heading"]])


def test_examples_are_next_sentence_questions(persuasion):
    examples = next_sentence_examples(persuasion, 200, seed=0)
    assert examples.columns.tolist() == ["context", "endings", "label", "book", "chapter"]
    assert examples["endings"].map(lambda endings: len(set(endings)) == len(endings) == 4).all()
    assert examples["label"].between(0, 3).all() and examples["label"].nunique() == 4
    sentences = set(book_sentences(persuasion)["text"])
    split = [split_sentences(text) for text in persuasion["text"]]
    consecutive = {pair for sentences_of in split for pair in zip(sentences_of, sentences_of[1:])}
    for context, endings, label in zip(examples["context"], examples["endings"], examples["label"]):
        assert (context, endings[label]) in consecutive
        assert context not in endings and set(endings) <= sentences


def test_same_seed_same_examples_other_seed_other_examples(persuasion):
    first = next_sentence_examples(persuasion, 300, seed=7)
    pd.testing.assert_frame_equal(first, next_sentence_examples(persuasion, 300, seed=7))
    assert not first.equals(next_sentence_examples(persuasion, 300, seed=8))
    assert first["chapter"].is_monotonic_increasing   # kept in reading order


def test_recipe_sizes_are_available_and_bad_requests_are_explained(persuasion):
    assert len(next_sentence_examples(persuasion, 1000, seed=0)) == 1000
    with pytest.raises(ValueError, match="fewer than num_examples=5000"):
        next_sentence_examples(persuasion, 5000)
    with pytest.raises(ValueError, match="num_choices must be at least 2"):
        next_sentence_examples(persuasion, 10, num_choices=1)
