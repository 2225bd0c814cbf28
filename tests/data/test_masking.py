"""MLM masking on real WordPiece ids: selection rules, the replacement split, words, spans, tf.data.

The corpus: Jane Austen paragraphs tokenised by the MiniLM tokenizer, one paragraph per sequence
(long ones cut at word boundaries), `[CLS] ... [SEP]`, up to 128 ids: about 110,000 maskable
tokens in sequences of 3 to 128 ids. Statistical checks use 5 binomial standard errors; every
masker has a fixed seed, so the tests are deterministic.
"""

import math

import numpy as np
import pytest
import tensorflow as tf

from kerasbert.data.mask_selection import span_length_probabilities, span_lengths
from kerasbert.data.masking import MaskedLMMasker
from kerasbert.data.masking_config import STRATEGIES, MaskingConfig, masking_from_legacy_options
from kerasbert.data.shipped import load_dataset
from kerasbert.families import BertTokenizer

SEQUENCE_LENGTH = 128
SIGMAS = 5
MASK_ID = 103  # MiniLM's [MASK] (checked in test_from_tokenizer)


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer.from_preset("all_minilm_l6_v2_en")


@pytest.fixture(scope="module")
def sequences(tokenizer):
    """Real sequences `[CLS] words [SEP]` of at most 128 ids, as a list of int lists."""
    paragraphs = load_dataset("jane_austen")["train"]["text"].tolist()[:1400]
    is_continuation = np.char.startswith(np.array(tokenizer.get_vocabulary()), "##")
    rows = []
    for ids in tokenizer.tokenize(paragraphs).to_list():
        while ids:
            cut = min(len(ids), SEQUENCE_LENGTH - 2)
            while 0 < cut < len(ids) and is_continuation[ids[cut]]:
                cut -= 1
            cut = cut or SEQUENCE_LENGTH - 2  # a word longer than a row (none here)
            rows.append([tokenizer.cls_token_id, *ids[:cut], tokenizer.sep_token_id])
            ids = ids[cut:]
    return rows


@pytest.fixture(scope="module")
def batch(sequences):
    return tf.ragged.constant(sequences, tf.int32)


@pytest.fixture(scope="module")
def masker_for(tokenizer):
    def make(**fields):
        return MaskedLMMasker.from_tokenizer(tokenizer, MaskingConfig(**fields), seed=0)

    return make


@pytest.fixture(scope="module")
def special_ids(masker_for):
    return np.array(masker_for().unselectable_token_ids)


@pytest.fixture(scope="module")
def words_of(tokenizer, special_ids):
    """The word index of each token of a sequence: a word is a piece and the "##" pieces after it."""
    is_continuation = np.char.startswith(np.array(tokenizer.get_vocabulary()), "##")

    def words(row):
        row = np.array(row)
        special = np.isin(row, special_ids)
        continues = is_continuation[row] & ~special & np.r_[False, ~special[:-1]]
        return np.cumsum(~continues) - 1

    return words


@pytest.fixture(scope="module")
def word_ids(sequences, words_of):
    return [words_of(row) for row in sequences]


def bert_budget(n, rate=0.15, max_selections=20):
    """Google BERT's num_to_predict, with n the maskable tokens."""
    return min(max_selections, max(1, int(round(n * rate)))) if n and rate else 0


def unpack(outputs, sequences):
    """Per sequence: (original ids, masked ids, selected positions, mask ids) as numpy arrays."""
    masked = outputs["token_ids"].to_list()
    weights = outputs["mask_weights"].numpy()
    positions = outputs["mask_positions"].numpy()
    mask_ids = outputs["mask_ids"].numpy()
    for i, row in enumerate(sequences):
        count = int(weights[i].sum())
        yield np.array(row), np.array(masked[i]), positions[i, :count], mask_ids[i, :count]


def check_selection(original, new, positions, mask_ids, special_ids):
    """Sorted positions of maskable tokens, their original ids as labels, nothing else changed."""
    assert np.all(np.diff(positions) > 0) and not np.isin(original[positions], special_ids).any()
    np.testing.assert_array_equal(mask_ids, original[positions])
    unselected = np.setdiff1d(np.arange(len(original)), positions)
    np.testing.assert_array_equal(new[unselected], original[unselected])


def within(observed, expected, sigma, name):
    message = f"{name}: {observed:.4f}, expected {expected:.4f} ± {SIGMAS} × {sigma:.4f}"
    assert abs(observed - expected) <= SIGMAS * sigma, message


def binomial_sigma(p, n):
    return math.sqrt(p * (1 - p) / n)


def runs(selected_positions):
    """Maximal runs of adjacent positions, as (start, end) inclusive."""
    if not len(selected_positions):
        return []
    breaks = np.flatnonzero(np.diff(selected_positions) > 1)
    starts = np.r_[selected_positions[0], selected_positions[breaks + 1]]
    ends = np.r_[selected_positions[breaks], selected_positions[-1]]
    return list(zip(starts, ends))


def replacement_counts(rows):
    """(selected, [MASK]ed, randomly replaced) token counts and the random ids."""
    selected = masked = 0
    random_ids = []
    for original, new, positions, _ in rows:
        selected += len(positions)
        changed = new[positions] != original[positions]
        is_mask = new[positions] == MASK_ID
        masked += int(is_mask.sum())
        random_ids.extend(new[positions][changed & ~is_mask])
    return selected, masked, np.array(random_ids)


def test_corpus_is_large_and_real(sequences, special_ids):
    lengths = np.array([len(row) for row in sequences])
    maskable = sum(int((~np.isin(row, special_ids)).sum()) for row in sequences)
    assert maskable >= 100_000 and lengths.max() == SEQUENCE_LENGTH and lengths.min() < 10


def test_token_selection_follows_bert_count_and_never_picks_specials(batch, sequences, masker_for, special_ids):
    outputs = masker_for()(batch)
    assert isinstance(outputs["token_ids"], tf.RaggedTensor) and outputs["token_ids"].dtype == tf.int32
    dtypes = [outputs[key].dtype for key in ("mask_positions", "mask_ids", "mask_weights")]
    assert dtypes == [tf.int32, tf.int32, tf.float32]
    assert outputs["mask_positions"].shape == (len(sequences), 20)
    total_selected = total_maskable = 0
    for original, new, positions, mask_ids in unpack(outputs, sequences):
        check_selection(original, new, positions, mask_ids, special_ids)
        maskable = int((~np.isin(original, special_ids)).sum())
        assert len(positions) == bert_budget(maskable)
        total_selected += len(positions)
        total_maskable += maskable
    padding = outputs["mask_weights"].numpy() == 0
    assert (outputs["mask_positions"].numpy()[padding] == 0).all()
    assert (outputs["mask_ids"].numpy()[padding] == 0).all()
    # The count is exact per sequence; rounding it on short sequences moves the total off 0.15
    # (measured 0.1507).
    assert abs(total_selected / total_maskable - 0.15) < 0.005


def test_replacements_split_80_10_10_and_random_ids_cover_the_vocabulary(
    batch, sequences, masker_for, special_ids
):
    selected, masked, random_ids = replacement_counts(unpack(masker_for()(batch), sequences))
    within(masked / selected, 0.8, binomial_sigma(0.8, selected), "[MASK] share")
    within(len(random_ids) / selected, 0.1, binomial_sigma(0.1, selected), "random share")
    assert not np.isin(random_ids, np.r_[special_ids, MASK_ID]).any()
    # Uniform over the drawable ids: 10 equal bins of the drawable index, and distinct draws.
    drawable = np.setdiff1d(np.arange(30522), np.r_[special_ids, MASK_ID])
    bins = np.bincount(np.searchsorted(drawable, random_ids) * 10 // len(drawable), minlength=10)
    expected = len(random_ids) / 10
    chi_square = float(((bins - expected) ** 2 / expected).sum())
    assert chi_square < 45  # P(chi2 with 9 dof > 45) ~ 1e-6
    n, size = len(random_ids), len(drawable)
    expected_distinct = size * (1 - (1 - 1 / size) ** n)
    assert len(set(random_ids.tolist())) >= expected_distinct - SIGMAS * math.sqrt(expected_distinct)


def test_rates_are_arguments(batch, sequences, masker_for, special_ids):
    masker = masker_for(
        selection_rate=0.3, mask_token_rate=0.5, random_token_rate=0.5, max_selections=40
    )
    rows = list(unpack(masker(batch), sequences))
    for original, _, positions, _ in rows:
        assert len(positions) == bert_budget(int((~np.isin(original, special_ids)).sum()), 0.3, 40)
    selected, masked, random_ids = replacement_counts(rows)
    within(masked / selected, 0.5, binomial_sigma(0.5, selected), "[MASK] share")
    within(len(random_ids) / selected, 0.5, binomial_sigma(0.5, selected), "random share")


def test_dense_padded_input_gives_the_ragged_masks_and_never_selects_padding(batch, sequences, masker_for):
    dense = batch.to_tensor(default_value=0, shape=[None, SEQUENCE_LENGTH])
    ragged_outputs = masker_for()(batch)
    dense_outputs = masker_for()(dense)
    for key in ("mask_positions", "mask_ids", "mask_weights"):
        np.testing.assert_array_equal(dense_outputs[key], ragged_outputs[key])
    padded = ragged_outputs["token_ids"].to_tensor(shape=dense.shape)
    np.testing.assert_array_equal(dense_outputs["token_ids"], padded)
    longer = tf.pad(dense, [[0, 0], [0, 32]])
    outputs = masker_for(selection_rate=1.0, max_selections=160)(longer)
    positions = np.where(outputs["mask_weights"].numpy() > 0, outputs["mask_positions"].numpy(), 0)
    lengths = np.array([len(row) for row in sequences])
    assert (positions < lengths[:, None] - 1).all() and outputs["token_ids"].shape == longer.shape
    np.testing.assert_array_equal(outputs["token_ids"].numpy()[:, SEQUENCE_LENGTH:], 0)


def test_single_sequence(sequences, masker_for):
    row = tf.constant(sequences[5], tf.int64)
    outputs = masker_for()(row)
    assert outputs["token_ids"].shape == row.shape and outputs["token_ids"].dtype == tf.int64
    assert outputs["mask_positions"].shape == (20,)
    count = int(outputs["mask_weights"].numpy().sum())
    labels = tf.gather(row, outputs["mask_positions"][:count])
    np.testing.assert_array_equal(outputs["mask_ids"][:count], labels)


def test_whole_words_are_never_split_and_continuations_are_chosen(
    batch, sequences, word_ids, masker_for, special_ids, tokenizer
):
    outputs = masker_for(strategy="whole_word")(batch)
    is_continuation = np.char.startswith(np.array(tokenizer.get_vocabulary()), "##")
    total_selected = total_budget = chosen_continuations = continuations = maskable = 0
    for (original, new, positions, mask_ids), words in zip(unpack(outputs, sequences), word_ids):
        check_selection(original, new, positions, mask_ids, special_ids)
        chosen_words = np.unique(words[positions])
        np.testing.assert_array_equal(np.flatnonzero(np.isin(words, chosen_words)), positions)
        budget = bert_budget(int((~np.isin(original, special_ids)).sum()))
        room = budget - len(positions)
        # Google's loop tries every word and skips those that overshoot: none left would fit.
        unchosen_words = np.setdiff1d(words[~np.isin(original, special_ids)], chosen_words)
        assert room >= 0 and (np.bincount(words)[unchosen_words] > room).all()
        total_selected += len(positions)
        total_budget += budget
        chosen_continuations += int(is_continuation[original[positions]].sum())
        continuations += int(is_continuation[original[1:-1]].sum())
        maskable += len(original) - 2
    assert total_selected / total_budget > 0.99  # measured: 1.0000
    # Every word has the same chance, so "##" pieces are chosen about as often as they occur
    # (measured: 4.3% of the chosen pieces, 4.8% of the text: skipping at the budget favours
    # short words).
    assert abs(chosen_continuations / total_selected - continuations / maskable) < 0.01


def spanbert_reference(row, words, budget, special_ids, rng):
    """SpanBERT's `PairWithSpanMaskingScheme.mask` loop, spans stopping at special tokens."""
    lengths = np.arange(1, 11)
    probabilities = span_length_probabilities(0.2, 10)
    maskable = np.flatnonzero(~np.isin(row, special_ids))
    mask = set()
    while len(mask) < budget:
        span_length = rng.choice(lengths, p=probabilities)
        anchor = rng.choice(maskable)
        if anchor in mask:
            continue
        start = np.flatnonzero(words == words[anchor])[0]
        position = start
        while (
            position < len(row)
            and row[position] not in special_ids
            and words[position] < words[start] + span_length
            and len(mask) < budget
        ):
            mask.add(position)
            position += 1
    return np.array(sorted(mask))


def run_lengths_in_words(positions, words):
    return [len(np.unique(words[start : end + 1])) for start, end in runs(positions)]


def test_spans_are_contiguous_words_with_spanbert_lengths(batch, sequences, word_ids, masker_for, special_ids):
    outputs = masker_for(strategy="span")(batch)
    special_set = set(special_ids.tolist())
    rng = np.random.default_rng(0)
    ours, reference = [], []
    mixed_runs = masked_runs = random_runs = total_runs = 0
    for (original, new, positions, mask_ids), words in zip(unpack(outputs, sequences), word_ids):
        budget = bert_budget(int((~np.isin(original, special_ids)).sum()))
        assert len(positions) == budget
        check_selection(original, new, positions, mask_ids, special_ids)
        word_starts = np.r_[True, words[1:] != words[:-1]]
        word_ends = np.r_[words[1:] != words[:-1], True]
        spans = runs(positions)
        assert all(word_starts[start] for start, _ in spans)
        assert sum(not word_ends[end] for _, end in spans) <= 1  # only the last span is cut at the budget
        for start, end in spans:
            is_mask = new[start : end + 1] == MASK_ID
            changed = new[start : end + 1] != original[start : end + 1]
            mixed_runs += bool(is_mask.any() and not is_mask.all())
            masked_runs += bool(is_mask.all())
            random_runs += bool(changed.any() and not is_mask.any())
        total_runs += len(spans)
        ours += run_lengths_in_words(positions, words)
        spanbert_positions = spanbert_reference(original, words, budget, special_set, rng)
        reference += run_lengths_in_words(spanbert_positions, words)
    # Realised runs (merged when touching, cut at the budget and at [SEP]) match SpanBERT's loop.
    ours, reference = np.array(ours), np.array(reference)
    sigma = math.sqrt(ours.var() / len(ours) + reference.var() / len(reference))
    within(ours.mean(), reference.mean(), sigma, "mean span length in words")
    assert mixed_runs == 0  # [MASK] / random / unchanged is decided per span
    within(masked_runs / total_runs, 0.8, binomial_sigma(0.8, total_runs), "[MASK]ed spans")
    within(random_runs / total_runs, 0.1, binomial_sigma(0.1, total_runs), "random spans")


def test_span_lengths_are_geometric_truncated_at_10(sequences, words_of, tokenizer):
    probabilities = span_length_probabilities(0.2, 10)
    mean = float(np.sum(np.arange(1, 11) * probabilities))
    sd = math.sqrt(float(np.sum(np.arange(1, 11) ** 2 * probabilities)) - mean**2)
    assert abs(mean - 3.8) < 0.005  # SpanBERT's "mean 3.8"
    logits = tf.math.log(tf.constant(probabilities, tf.float32))
    draws = span_lengths(logits, 100_000, tf.constant([1, 2])).numpy()
    assert draws.min() == 1 and draws.max() == 10
    within(draws.mean(), mean, sd / math.sqrt(len(draws)), "drawn span length")
    # Realised spans keep that mean where few are cut or merged: the corpus as 2,048-id rows, 5%
    # masked, 25 spans a row of which the budget cuts one (measured: 3.83 ± 0.07 words, 1,302 spans).
    text = [token for row in sequences for token in row[1:-1]]
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    rows = [[cls, *text[i : i + 2046], sep] for i in range(0, 106_000, 2046)]
    masker = MaskedLMMasker.from_tokenizer(
        tokenizer, MaskingConfig(strategy="span", selection_rate=0.05, max_selections=2048), seed=0
    )
    lengths = []
    for (_, _, positions, _), row in zip(unpack(masker(tf.ragged.constant(rows)), rows), rows):
        lengths += run_lengths_in_words(positions, words_of(row))
    within(np.mean(lengths), mean, sd / math.sqrt(len(lengths)), "realised span length")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_dynamic_masks_change_and_a_seed_repeats_them(batch, masker_for, strategy):
    masker = masker_for(strategy=strategy)
    first, second = masker(batch), masker(batch)
    repeated = masker_for(strategy=strategy)(batch)
    assert np.mean(np.any(first["mask_positions"] != second["mask_positions"], axis=1)) > 0.9
    assert first["token_ids"].to_list() == repeated["token_ids"].to_list()
    for key in ("mask_positions", "mask_ids", "mask_weights"):
        np.testing.assert_array_equal(first[key], repeated[key])


def epoch_positions(dataset):
    return np.concatenate([batch["mask_positions"] for batch in dataset.as_numpy_iterator()])


def test_inside_tf_data_map(sequences, masker_for):
    ragged = tf.data.Dataset.from_tensor_slices(tf.ragged.constant(sequences[:256])).ragged_batch(64)
    for strategy in STRATEGIES:
        dataset = ragged.map(masker_for(strategy=strategy))
        assert dataset.element_spec["mask_positions"].shape.as_list() == [None, 20]
        first, second = epoch_positions(dataset), epoch_positions(dataset)
        assert first.shape == (256, 20) and (first != second).any()  # dynamic
        cached = ragged.map(masker_for(strategy=strategy)).cache()  # static
        np.testing.assert_array_equal(epoch_positions(cached), epoch_positions(cached))
        np.testing.assert_array_equal(epoch_positions(cached), first)  # same seed, same first epoch


@pytest.mark.parametrize(
    "fields, error, argument",
    [
        ({"selection_rate": 1.5}, ValueError, "selection_rate"),
        ({"mask_token_rate": -0.1}, ValueError, "mask_token_rate"),
        ({"mask_token_rate": "0.8"}, TypeError, "mask_token_rate"),
        ({"mask_token_rate": 0.8, "random_token_rate": 0.3}, ValueError, "mask_token_rate + random_token_rate"),
        ({"strategy": "words"}, ValueError, "strategy"),
        ({"max_selections": 0}, ValueError, "max_selections"),
        ({"max_selections": 2.5}, TypeError, "max_selections"),
        ({"span_geometric_p": 0.0}, ValueError, "span_geometric_p"),
        ({"dynamic": "static"}, TypeError, "dynamic"),
    ],
)
def test_bad_masking_config_raises(fields, error, argument):
    with pytest.raises(error, match=argument.replace("+", r"\+")):
        MaskingConfig(**fields)


@pytest.mark.parametrize(
    "kwargs, error, argument",
    [
        ({"masking": MaskingConfig(strategy="whole_word")}, ValueError, "continuation_token_ids"),
        ({"masking": MaskingConfig(strategy="span")}, ValueError, "continuation_token_ids"),
        ({"mask_token_id": 500}, ValueError, "mask_token_id"),
        ({"masking": "static"}, TypeError, "MaskingConfig"),
        ({"seed": 1.5}, TypeError, "seed"),
    ],
)
def test_bad_masker_arguments_raise(kwargs, error, argument):
    arguments = {"vocabulary_size": 100, "mask_token_id": 3, "unselectable_token_ids": [0, 1, 2], **kwargs}
    with pytest.raises(error, match=argument):
        MaskedLMMasker(**arguments)


def test_legacy_masking_options_become_one_config():
    saved = {"masking": "static", "mask_selection_rate": 0.2, "mask_token_rate": 0.85, "random_token_rate": 0.0,
             "max_selections": 30, "mask_strategy": "span", "text_column": "body"}
    options = masking_from_legacy_options(saved)
    assert options == {"text_column": "body", "masking": {"selection_rate": 0.2, "mask_token_rate": 0.85,
                                                          "random_token_rate": 0.0, "max_selections": 30,
                                                          "strategy": "span", "dynamic": False}}
    assert MaskingConfig.coerce(options["masking"]) == MaskingConfig(0.2, 0.85, 0.0, 30, "span", dynamic=False)
    current = {"masking": MaskingConfig().get_config(), "text_column": "text"}
    assert masking_from_legacy_options(current) is current


def test_from_tokenizer(tokenizer, masker_for):
    masker = masker_for()
    unselectable = set(masker.unselectable_token_ids)
    assert {0, 101, 102, 103} <= unselectable and tokenizer.unk_token_id not in unselectable
    assert masker.vocabulary_size == 30522 and masker.mask_token_id == MASK_ID
    assert len(masker.continuation_token_ids) == 5828
