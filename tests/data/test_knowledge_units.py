"""ERNIE's knowledge masking (issue 37): entities the data names are found in the token ids and masked whole.

References: ERNIE (Sun et al. 2019), section 3.2 (entity- and phrase-level masking: a unit's tokens are masked
together); real text: Persuasion's characters and places, and People's Daily sentences with their tagged
person, place and organisation names (../shared/data/peoples_daily_ner).
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kerasbert.data.knowledge_units import JOINED, join_occurrences
from kerasbert.data.masking import MaskedLMMasker
from kerasbert.data.masking_config import MaskingConfig
from kerasbert.data.pretraining_examples import pretraining_examples
from kerasbert.data.shipped import load_dataset
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.families.bert_preprocessor import BertPreprocessor
from kerasbert.tasks.bert_pretrainer import BertPretrainer

PEOPLES_DAILY = Path(__file__).resolve().parents[3] / "shared" / "data" / "peoples_daily_ner" / "example.dev"
PERSUASION_UNITS = ["Anne Elliot", "Sir Walter", "Lady Russell", "Kellynch Hall", "Captain Wentworth",
                    "Mr Elliot", "Mrs Clay", "Uppercross"]


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer.from_preset("all_minilm_l6_v2_en")


@pytest.fixture(scope="module")
def persuasion():
    """Persuasion's chapters (the shipped test split) with the same character and place names for each."""
    paragraphs = load_dataset("jane_austen", "test")
    chapters = paragraphs.groupby("chapter", sort=False)["text"].agg("\n".join).tolist()[:6]
    return pd.DataFrame({"text": chapters, "entities": [PERSUASION_UNITS] * len(chapters)})


def peoples_daily(limit):
    """The first `limit` sentences of People's Daily's dev set: the text and its tagged names (B-/I- runs)."""
    rows, chars, tags = [], [], []
    for line in PEOPLES_DAILY.read_text(encoding="utf-8").splitlines() + [""]:
        if line.strip():
            char, tag = line.split()
            chars.append(char)
            tags.append(tag)
            continue
        if chars:
            entities, current = [], ""
            for char, tag in zip(chars, tags):
                if tag.startswith("B-") or (tag.startswith("I-") and not current):
                    if current:
                        entities.append(current)
                    current = char
                elif tag.startswith("I-"):
                    current += char
                else:
                    if current:
                        entities.append(current)
                    current = ""
            entities += [current] if current else []
            rows.append({"text": "".join(chars), "entities": entities})
            chars, tags = [], []
        if len(rows) == limit:
            break
    return pd.DataFrame(rows)


def occurrences(ids, pattern):
    return [start for start in range(len(ids) - len(pattern) + 1) if tuple(ids[start:start + len(pattern)]) == pattern]


def test_every_occurrence_of_a_unit_is_joined_and_nothing_else(persuasion, tokenizer):
    plain = pretraining_examples(persuasion, tokenizer, next_sentence=None, seed=0)
    marked = pretraining_examples(persuasion, tokenizer, next_sentence=None, seed=0, units_column="entities")
    assert plain["token_ids"].to_list() == marked["token_ids"].to_list()  # the same examples, marks beside them
    patterns = [tuple(ids) for ids in tokenizer.tokenize(PERSUASION_UNITS).to_list() if len(ids) > 1]
    found = 0
    for ids, joined in zip(marked["token_ids"].to_list(), marked["joined"].to_list()):
        expected = np.zeros(len(ids), int)
        for pattern in patterns:
            for start in occurrences(ids, pattern):
                expected[start + 1:start + len(pattern)] = 1
                found += 1
        np.testing.assert_array_equal(joined, expected)
    print(f"{found} occurrences of {len(patterns)} multi-token units in {marked['token_ids'].nrows()} windows")
    assert found > 50


def test_whole_word_masking_takes_each_unit_whole(persuasion, tokenizer):
    examples = pretraining_examples(persuasion, tokenizer, next_sentence=None, seed=0, units_column="entities")
    masker = MaskedLMMasker.from_tokenizer(tokenizer, MaskingConfig(strategy="whole_word", selection_rate=0.3,
                                                                    max_selections=60), seed=0)
    patterns = [tuple(ids) for ids in tokenizer.tokenize(PERSUASION_UNITS).to_list() if len(ids) > 1]

    def unit_selections(outputs):
        """(units masked whole, units masked in part) over every occurrence in the examples."""
        whole = part = 0
        for ids, positions, weights in zip(examples["token_ids"].to_list(), outputs["mask_positions"].numpy(),
                                           outputs["mask_weights"].numpy()):
            chosen = set(positions[weights > 0].tolist())
            for pattern in patterns:
                for start in occurrences(ids, pattern):
                    taken = sum(i in chosen for i in range(start, start + len(pattern)))
                    whole += taken == len(pattern)
                    part += 0 < taken < len(pattern)
        return whole, part

    whole, part = unit_selections(masker(examples["token_ids"], examples["joined"]))
    print(f"with units: {whole} masked whole, {part} in part")
    assert whole > 10 and part == 0
    _, part_without = unit_selections(masker(examples["token_ids"]))
    assert part_without > 0  # word by word, a name's words are chosen apart


def test_chinese_entities_of_peoples_daily_become_units(tokenizer):
    if not PEOPLES_DAILY.is_file():
        pytest.fail(f"{PEOPLES_DAILY} is missing: the People's Daily NER files belong in ../shared/data")
    sentences = peoples_daily(200)
    examples = pretraining_examples(sentences, tokenizer, next_sentence=None, seed=0, units_column="entities",
                                    max_sequence_length=64)
    joined = np.concatenate(examples["joined"].to_list())
    names = sum(len(entities) for entities in sentences["entities"])
    print(f"{names} tagged names in 200 sentences; {joined.sum()} of {joined.size} characters joined")
    assert names > 100 and joined.sum() > names  # names of two or more characters, one token each


def test_overlapping_units_and_bad_columns():
    assert join_occurrences([5, 6, 7, 8], {(5, 6), (6, 7, 8)}) == [5, 6 + JOINED, 7 + JOINED, 8 + JOINED]
    documents = pd.DataFrame({"text": ["Anne Elliot walked."], "entities": ["Anne Elliot"]})
    tokenizer = BertTokenizer.from_preset("all_minilm_l6_v2_en")
    with pytest.raises(TypeError, match="list of the entity or phrase strings"):
        pretraining_examples(documents, tokenizer, next_sentence=None, units_column="entities")
    with pytest.raises(ValueError, match="No column 'names'"):
        pretraining_examples(documents, tokenizer, next_sentence=None, units_column="names")
    with pytest.raises(TypeError, match="DataFrame"):
        pretraining_examples(["Anne Elliot walked."], tokenizer, next_sentence=None, units_column="entities")
    with pytest.raises(ValueError, match="masked whole"):
        MaskedLMMasker.from_tokenizer(tokenizer, MaskingConfig(strategy="token"), seed=0)(
            [[101, 5, 6, 102]], joined=[[0, 0, 1, 0]])


def test_a_pretrainer_reads_the_units_column_and_masks_them_whole(tokenizer):
    preprocessor = BertPreprocessor(tokenizer, sequence_length=64)
    backbone = BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                            max_sequence_length=64)
    with pytest.raises(ValueError, match="strategy='whole_word'"):
        BertPretrainer(backbone, preprocessor, next_sentence=None, max_sequence_length=64,
                       columns={"units": "entities"})
    ernie = BertPretrainer(backbone, preprocessor, next_sentence=None, max_sequence_length=64,
                           masking=MaskingConfig(strategy="whole_word"), columns={"units": "entities"})
    sentences = peoples_daily(64)
    inputs, targets, weights = next(iter(ernie.pretraining_dataset(sentences, batch_size=64, dynamic=False)))
    assert "joined" not in inputs  # the marks steer the masking only
    history = ernie.fit(sentences, epochs=1, batch_size=16, verbose=0).history
    assert np.isfinite(history["loss"][0])
