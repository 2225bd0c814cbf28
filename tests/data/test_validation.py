"""Schema checks: clear errors naming column, row, count and fix; inputs never modified."""

import csv

import numpy as np
import pandas as pd
import pytest

from kerasbert.data.label_validation import validate_label_column, validate_label_values
from kerasbert.data.list_validation import validate_token_columns
from kerasbert.data.shipped import load_dataset
from kerasbert.data.validation import require_columns, to_dataframe, validate_text_columns

SST2_TRAIN = "/work/shared/data/glue/SST-2/train.tsv"


@pytest.fixture
def messy():
    """Real sentences with every kind of bad text cell, on a non-default index."""
    texts = load_dataset("uci_sentiment", "test")["text"].tolist()[:8]
    texts[1], texts[2], texts[3], texts[4], texts[5], texts[6] = (
        None,
        np.nan,
        42,
        b"bytes",
        "  ",
        "",
    )
    return pd.DataFrame(
        {"text": texts, "label": [1, 0, 1, 0, 1, 0, 1, 0]}, index=[f"r{i}" for i in range(8)]
    )


def test_real_data_passes_and_is_untouched():
    uci = load_dataset("uci_sentiment", "train")
    sst2 = pd.read_csv(SST2_TRAIN, sep="\t", quoting=csv.QUOTE_NONE)
    for df, text_column in [(uci, "text"), (sst2, "sentence")]:
        before = df.copy()
        validate_text_columns(df, {"text_column": text_column})
        assert validate_label_column(df, "label") == "int"
        pd.testing.assert_frame_equal(df, before)


def test_missing_column_lists_columns_suggests_and_names_argument():
    df = pd.DataFrame({"Text": ["a"], "label": [1]})
    with pytest.raises(ValueError) as error:
        validate_text_columns(df, "text")
    message = str(error.value)
    assert "['Text', 'label']" in message
    assert "Did you mean 'Text'?" in message
    assert "text_column='Text'" in message


def test_missing_column_names_the_callers_argument():
    df = pd.DataFrame({"premise": ["a"], "hypothesis": ["b"]})
    with pytest.raises(ValueError, match="text_pair_column="):
        validate_text_columns(df, {"text_column": "premise", "text_pair_column": "hypotesis"})
    with pytest.raises(ValueError, match="label_column="):
        validate_label_column(df, "label")
    with pytest.raises(ValueError, match="tags_column="):
        require_columns(df, {"tags_column": "tags"})


def test_bad_text_cells_report_kind_count_first_row_and_fix(messy):
    before = messy.copy()
    with pytest.raises(ValueError) as error:
        validate_text_columns(messy, "text")
    message = str(error.value)
    assert "Column 'text'" in message
    assert "2 rows are missing (NaN/None), first at row 'r1'" in message
    assert "df.dropna(subset=['text'])" in message
    assert "1 row is of type int, not str, first at row 'r3' (42)" in message
    assert "astype(str)" in message
    assert "1 row is bytes, not str, first at row 'r4'" in message
    assert "decode('utf-8')" in message
    assert "2 rows are empty or only whitespace, first at row 'r5'" in message
    pd.testing.assert_frame_equal(messy, before)


def test_allow_empty_accepts_blank_strings():
    df = pd.DataFrame({"text": ["fine", "", "   "]})
    validate_text_columns(df, "text", allow_empty=True)
    with pytest.raises(ValueError, match="empty or only whitespace"):
        validate_text_columns(df, "text")


def test_pandas_string_dtype_with_missing_value_is_reported():
    df = pd.DataFrame({"text": pd.array(["good", None], dtype="string")})
    with pytest.raises(ValueError, match="1 row is missing"):
        validate_text_columns(df, "text")


def test_to_dataframe_normalises_inputs_to_a_copy():
    sentences = load_dataset("uci_sentiment", "test")["text"].tolist()[:3]
    assert to_dataframe(sentences)["text"].tolist() == sentences
    assert to_dataframe(np.array(sentences, dtype=object))["text"].tolist() == sentences
    assert to_dataframe(
        pd.Series(sentences, name="review"), text_column="text"
    ).columns.tolist() == ["text"]
    assert to_dataframe({"text": sentences, "label": [1, 0, 1]}).shape == (3, 2)

    original = pd.DataFrame({"text": sentences})
    before = original.copy()
    copy = to_dataframe(original)
    copy.loc[0, "text"] = "changed"
    pd.testing.assert_frame_equal(original, before)

    series = pd.Series(sentences)
    frame = to_dataframe(series)
    frame.loc[0, "text"] = "changed"
    assert series[0] == sentences[0]


def test_to_dataframe_reads_one_string_and_rejects_what_it_cannot_read():
    assert to_dataframe("a film", text_column="review")["review"].tolist() == ["a film"]
    with pytest.raises(TypeError, match="Got None instead of data"):
        to_dataframe(None)
    duplicated = pd.DataFrame([["a film", "dull", 1]], columns=["text", "text", "label"])
    with pytest.raises(ValueError, match=r"more than one column named 'text'.*df.loc\[:, ~df.columns.duplicated\(\)\]"):
        to_dataframe(duplicated)
    assert duplicated.columns.tolist() == ["text", "text", "label"]
    with pytest.raises(TypeError, match="Cannot read examples from a int"):
        to_dataframe(3)
    with pytest.raises(ValueError, match="different lengths"):
        to_dataframe({"text": ["a", "b"], "label": [1]})


def test_missing_labels_are_named_with_row():
    df = pd.DataFrame({"label": [1.0, np.nan, 0.0, None]}, index=[10, 11, 12, 13])
    before = df.copy()
    with pytest.raises(ValueError, match=r"2 rows are missing \(NaN/None\), first at row 11"):
        validate_label_column(df, "label")
    pd.testing.assert_frame_equal(df, before)


def test_mixed_label_types_give_an_example_of_each():
    df = pd.DataFrame({"label": [1, 0, "pos", 1]})
    with pytest.raises(ValueError) as error:
        validate_label_column(df, "label")
    assert "int (e.g. 1 at row 0) and str (e.g. 'pos' at row 2)" in str(error.value)


def test_label_kinds():
    assert validate_label_values(["neg", "pos"]) == "str"
    assert validate_label_values(np.array([True, False])) == "bool"
    assert validate_label_values([1, 2.5]) == "float"
    assert validate_label_values(pd.Series([0.0, 1.0])) == "float"
    assert validate_label_values([["a", "b"], ("b",), {"c"}, []]) == "list"


def test_label_values_must_suit_the_problem_type():
    with pytest.raises(ValueError, match="'regression' needs numeric labels"):
        validate_label_values(["neg", "pos"], problem_type="regression")
    with pytest.raises(ValueError, match="'multilabel' needs a list of labels per row"):
        validate_label_values(["neg", "pos"], problem_type="multilabel")
    with pytest.raises(ValueError, match="pass problem_type='multilabel'"):
        validate_label_values([["a"], ["b"]], problem_type="multiclass")
    with pytest.raises(ValueError, match=r"1 row is not whole numbers, first at row 1 \(0.5\)"):
        validate_label_values([1.0, 0.5], problem_type="binary")
    validate_label_values([1.0, 0.0], problem_type="binary")
    with pytest.raises(ValueError, match="Unknown problem_type='ordinal'"):
        validate_label_values([1, 0], problem_type="ordinal")


def test_bad_label_values():
    with pytest.raises(ValueError, match="holds a dict value at row 1"):
        validate_label_values([1, {"a": 1}])
    with pytest.raises(ValueError, match="1 row is infinite"):
        validate_label_values([0.5, np.inf])
    with pytest.raises(ValueError, match="a list of class names of one type"):
        validate_label_values([["a", 1]])


def test_token_columns():
    df = pd.DataFrame(
        {
            "tokens": [["EU", "rejects", "German", "call"], ["Peter", "Blackburn"]],
            "tags": [["B-ORG", "O", "B-MISC", "O"], ["B-PER", "I-PER"]],
        }
    )
    before = df.copy()
    validate_token_columns(df, "tokens", "tags")
    validate_token_columns(df, "tokens")
    pd.testing.assert_frame_equal(df, before)


@pytest.mark.parametrize(
    "tokens, tags, message",
    [
        ("EU rejects", ["O"], "must hold a list of words per row; row 0"),
        ([], [], "Row 0 of column 'tokens' has no words"),
        (["EU", ""], ["O", "O"], "holds the word ''"),
        (["EU", 3], ["O", "O"], "holds the word 3"),
        (["EU", "rejects"], ["O"], "Row 0 has 2 words in 'tokens' but 1 tags in 'tags'"),
        (["EU", "rejects"], "O O", "must hold a list of tags per row"),
        (["EU", "rejects"], ["O", None], "holds the tag None"),
        (["EU", "rejects"], ["O", 0], "mixes tag types"),
    ],
)
def test_bad_token_columns(tokens, tags, message):
    df = pd.DataFrame({"tokens": [tokens], "tags": [tags]})
    with pytest.raises(ValueError, match=message):
        validate_token_columns(df, "tokens", "tags")
