"""Loaders for the public formats: counts on the real files in ../shared/data, errors on broken copies."""

import os
import re
from pathlib import Path

import pytest

from kerasbert.data.conll import load_conll
from kerasbert.data.glue import load_glue_tsv
from kerasbert.data.squad import load_squad
from kerasbert.data.swag import load_swag
from kerasbert.data.text_corpus import load_text_corpus

SHARED_DATA = Path(os.environ.get("KERASBERT_SHARED_DATA")
                   or Path(__file__).resolve().parents[2].parent / "shared" / "data")


@pytest.fixture(scope="module")
def shared():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"../shared/data not found: {SHARED_DATA} (set KERASBERT_SHARED_DATA to the "
                    "benchmark data folder)")
    return SHARED_DATA


def write(folder, name, text, encoding="utf-8"):
    path = folder / name
    path.write_bytes(text.encode(encoding))
    return path


# SQuAD -------------------------------------------------------------------------------------------

def test_squad_v11_dev(shared):
    dev = load_squad(shared / "squad" / "dev-v1.1.json")
    assert len(dev) == 10570
    assert dev.columns.tolist() == ["id", "title", "question", "context", "answer_texts",
                                    "answer_starts", "is_impossible"]
    assert not dev.is_impossible.any() and dev.answer_texts.str.len().min() >= 1
    assert dev.answer_texts.str.len().sum() == 34726
    first = dev.iloc[0]
    assert first.id == "56be4db0acb8001400a502ec" and first.title == "Super_Bowl_50"
    assert first.answer_texts[0] == "Denver Broncos" and first.answer_starts[0] == 177
    assert first.context[177:177 + len("Denver Broncos")] == "Denver Broncos"


def test_squad_v2_half_dev(shared):
    dev = load_squad(shared / "squad" / "cs224n-squad2-dev-half.json")
    assert len(dev) == 6078
    assert dev.is_impossible.sum() == 3168
    assert (dev.answer_texts.str.len()[dev.is_impossible] == 0).all()
    assert (dev.answer_starts.str.len()[~dev.is_impossible] > 0).all()


SQUAD_RECORD = ('{"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": "Paris is in '
                'France.", "qas": [{"id": "q1", "question": "Where?", "answers": [ANSWER]}]}]}]}')


@pytest.mark.parametrize("answer, message", [
    ('{"text": "France", "answer_start": 40}', r"answer_start 40 with a 6-character answer is outside its 19-character context"),
    ('{"text": "France", "answer_start": 0}', r"answer text 'France' is not at answer_start 0; the context there reads 'Paris '"),
    ('{"text": "France"}', r"missing 'answer_start'"),
])
def test_squad_bad_answer_names_the_record(tmp_path, answer, message):
    path = write(tmp_path, "bad.json", SQUAD_RECORD.replace("ANSWER", answer))
    with pytest.raises(ValueError, match=rf"bad\.json, record data\[0\]\.paragraphs\[0\]\.qas\[0\] "
                                         rf"\(id q1\), answers\[0\]: {message}"):
        load_squad(path)


def test_squad_good_record_and_bad_json(tmp_path):
    good = load_squad(write(tmp_path, "ok.json", SQUAD_RECORD.replace(
        "ANSWER", '{"text": "France", "answer_start": 12}')))
    assert good.iloc[0].answer_texts == ["France"] and good.iloc[0].answer_starts == [12]
    assert good.is_impossible.dtype == bool and not good.is_impossible[0]
    with pytest.raises(ValueError, match=r"broken\.json, line 2 column \d+: invalid JSON"):
        load_squad(write(tmp_path, "broken.json", '{"data": [\n{"title": "T",, }]}'))
    with pytest.raises(ValueError, match=r"list\.json: not a SQuAD file"):
        load_squad(write(tmp_path, "list.json", "[]"))
    missing = SQUAD_RECORD.replace('"question": "Where?", ', "").replace("ANSWER", "")
    with pytest.raises(ValueError, match=r"qas\[0\] \(id q1\): missing 'question'"):
        load_squad(write(tmp_path, "missing.json", missing))


# CoNLL and character BIO files -------------------------------------------------------------------

def test_conll2003_counts(shared):
    train = load_conll(shared / "conll2003" / "train.txt")
    test = load_conll(shared / "conll2003" / "test.txt")
    assert (len(train), len(test)) == (14041, 3453)
    assert train.tokens.str.len().sum() == 203621
    assert train.iloc[0].tokens == ["EU", "rejects", "German", "call", "to", "boycott", "British",
                                    "lamb", "."]
    assert train.iloc[0].tags == ["B-ORG", "O", "B-MISC", "O", "O", "O", "B-MISC", "O", "O"]
    assert set(train.tags.explode()) == {"O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG",
                                         "B-MISC", "I-MISC"}
    assert not train.tokens.explode().eq("-DOCSTART-").any()


@pytest.mark.parametrize("file, sentences, characters", [
    ("msra_ner/msra_test_bio.txt", 3442, 172601),            # char<TAB>tag
    ("peoples_daily_ner/example.dev", 2318, 109870),         # char<SPACE>tag
    ("weibo_ner/weiboNER_2nd_conll.dev", 270, 14509),        # char+position<TAB>tag
])
def test_chinese_bio_files(shared, file, sentences, characters):
    frame = load_conll(shared / file)
    assert len(frame) == sentences
    assert frame.tokens.str.len().sum() == characters
    assert (frame.tokens.str.len() == frame.tags.str.len()).all()
    assert frame.tags.explode().str.match(r"^(O|[BI]-\S+)$").all()


def test_conll_two_columns_docstart_and_blank_runs(tmp_path):
    text = "-DOCSTART- O\n\nJohn B-PER\nlives O\n\n\n\nin O\nParis B-LOC\n-DOCSTART- O\nHi O\n"
    frame = load_conll(write(tmp_path, "small.txt", text))
    assert frame.tokens.tolist() == [["John", "lives"], ["in", "Paris"], ["Hi"]]
    assert frame.tags.tolist() == [["B-PER", "O"], ["O", "B-LOC"], ["O"]]


def test_conll_wrong_column_count_names_the_line(tmp_path):
    path = write(tmp_path, "ragged.txt", "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\ncall NN O\n")
    with pytest.raises(ValueError, match=r"ragged\.txt, line 4: expected 4 columns like line 1, found 3"):
        load_conll(path)
    with pytest.raises(ValueError, match=r"tagless\.txt, line 1: expected a token and a tag"):
        load_conll(write(tmp_path, "tagless.txt", "EU\nrejects\n"))


# GLUE --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("task, file, rows, labels", [
    ("SST-2", "SST-2/train.tsv", 67349, {1: 37569, 0: 29780}),
    ("MRPC", "MRPC/dev.tsv", 408, {1: 279, 0: 129}),
    ("RTE", "RTE/dev.tsv", 277, {"entailment": 146, "not_entailment": 131}),
    ("CoLA", "CoLA/dev.tsv", 1043, {1: 721, 0: 322}),
    ("QNLI", "QNLI/dev.tsv", 5463, {"not_entailment": 2761, "entailment": 2702}),
])
def test_glue_counts_and_labels(shared, task, file, rows, labels):
    frame = load_glue_tsv(shared / "glue" / file, task)
    assert len(frame) == rows
    assert frame.label.value_counts().to_dict() == labels
    assert frame.text.str.len().min() > 0


def test_glue_task_columns(shared):
    glue = shared / "glue"
    mrpc = load_glue_tsv(glue / "MRPC" / "dev.tsv", "mrpc")      # header starts with a BOM
    assert mrpc.columns.tolist() == ["text", "text_pair", "label", "id1", "id2"]
    assert mrpc.iloc[0].tolist()[2:] == [1, 1355540, 1355592]
    cola = load_glue_tsv(glue / "CoLA" / "dev.tsv", "cola")      # no header line
    assert cola.iloc[0].tolist() == ["The sailors rode the breeze clear of the rocks.", 1, "gj04"]
    stsb = load_glue_tsv(glue / "STS-B" / "dev.tsv", "STS-B")
    assert len(stsb) == 1500 and stsb.label.dtype == float
    assert stsb.label.between(0, 5).all() and stsb.iloc[0].label == 5.0
    qnli = load_glue_tsv(glue / "QNLI" / "dev.tsv", "QNLI")      # bare quotes stay text
    assert (qnli.text_pair.str.count('"') % 2 == 1).any()
    assert qnli.idx.tolist() == list(range(5463))


def test_glue_unlabelled_test_files(tmp_path):
    sst2 = load_glue_tsv(write(tmp_path, "test.tsv", "index\tsentence\n0\tuneasy mishmash\n"), "sst2")
    assert sst2.columns.tolist() == ["text", "idx"]
    cola = load_glue_tsv(write(tmp_path, "cola.tsv", "index\tsentence\n7\tBill left.\n"), "CoLA")
    assert cola.iloc[0].tolist() == ["Bill left.", 7]
    qqp = load_glue_tsv(write(tmp_path, "qqp.tsv", "id\tquestion1\tquestion2\n3\tWhy?\tHow?\n"), "QQP")
    assert qqp.columns.tolist() == ["text", "text_pair", "idx"]


def test_glue_mnli_and_qqp_labelled_files(tmp_path):
    header = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
              "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tlabel3\t"
              "label4\tlabel5\tgold_label\n")
    row = "0\t63735\t63735n\tslate\t(a)\t(b)\t(A)\t(B)\tThe new rights are nice.\tEveryone loves them.\t" \
          "neutral\tentailment\tneutral\tneutral\tneutral\tneutral\n"
    mnli = load_glue_tsv(write(tmp_path, "dev_matched.tsv", header + row), "MNLI")
    assert mnli.iloc[0].tolist() == ["The new rights are nice.", "Everyone loves them.", "neutral", 0,
                                     "63735n"]
    qqp = load_glue_tsv(write(tmp_path, "dev.tsv", "id\tqid1\tqid2\tquestion1\tquestion2\t"
                              "is_duplicate\n5\t11\t12\tHow old?\tWhat age?\t1\n"), "qqp")
    assert qqp.iloc[0].tolist() == ["How old?", "What age?", 1, 5, 11, 12]


def test_glue_malformed_files_name_the_line(tmp_path):
    ragged = write(tmp_path, "ragged.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\ta\tb\n")
    with pytest.raises(ValueError, match=r"ragged\.tsv, line 3: expected 4 tab-separated fields .* found 3"):
        load_glue_tsv(ragged, "RTE")
    label = write(tmp_path, "label.tsv", "sentence\tlabel\nfine film\tpositive\n")
    with pytest.raises(ValueError, match=r"label\.tsv, line 2: label 'positive' is not an integer"):
        load_glue_tsv(label, "SST-2")
    with pytest.raises(ValueError, match=r"header has no 'question' column.*task='QNLI'"):
        load_glue_tsv(ragged, "qnli")
    with pytest.raises(ValueError, match="Unknown GLUE task 'imdb'. Known tasks: CoLA, SST-2"):
        load_glue_tsv(ragged, "imdb")


# SWAG --------------------------------------------------------------------------------------------

SWAG_HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label\n"
SWAG_ROW = ('0,lsmdc1052_Harry_Potter_and_the_order_of_phoenix-94857,18313,Students lower their eyes '
            'nervously. She,Students lower their eyes nervously.,She,gold,"pats her shoulder, then '
            'saunters toward someone.",turns with two students.,walks slowly towards someone.,'
            '"wheels around as her dog thunders out.",2\n')


def test_swag_official_layout(tmp_path):
    frame = load_swag(write(tmp_path, "val.csv", SWAG_HEADER + SWAG_ROW))
    assert frame.columns.tolist() == ["context", "question", "endings", "label", "idx", "video_id",
                                      "fold_ind"]
    row = frame.iloc[0]
    assert row.context == "Students lower their eyes nervously." and row.question == "She"
    assert row.endings[0] == "pats her shoulder, then saunters toward someone." and len(row.endings) == 4
    assert (row.label, row.idx, row.fold_ind) == (2, 0, "18313")


def test_swag_test_file_has_no_label(tmp_path):
    header = SWAG_HEADER.replace(",label\n", "\n")
    frame = load_swag(write(tmp_path, "test.csv", header + SWAG_ROW.replace(",2\n", "\n")))
    assert "label" not in frame.columns and len(frame) == 1


def test_swag_malformed_files(tmp_path):
    with pytest.raises(ValueError, match=r"short\.csv, line 3: expected 12 comma-separated fields"):
        load_swag(write(tmp_path, "short.csv", SWAG_HEADER + SWAG_ROW + "1,vid,3,a,b\n"))
    with pytest.raises(ValueError, match=r"label\.csv, line 2: label '4' is not one of 0, 1, 2, 3"):
        load_swag(write(tmp_path, "label.csv", SWAG_HEADER + SWAG_ROW.replace(",2\n", ",4\n")))
    with pytest.raises(ValueError, match=r"other\.csv: not a SWAG file: the header has no ending0"):
        load_swag(write(tmp_path, "other.csv", "sent1,sent2,label\na,b,0\n"))


# Raw text corpora --------------------------------------------------------------------------------

def test_text_corpus_keeps_each_file_whole_by_default(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "b").mkdir(parents=True)
    write(corpus, "a.txt", "First paragraph.\nSecond line.\n\nNext paragraph.\n")
    write(corpus / "b", "c.txt", "Other book.\n")
    write(corpus, "notes.md", "not matched")
    frame = load_text_corpus(corpus)
    assert frame.source.tolist() == ["a.txt", "b/c.txt"]
    assert frame.text[0] == "First paragraph.\nSecond line.\n\nNext paragraph."
    assert load_text_corpus(corpus, pattern="*.md").text.tolist() == ["not matched"]


def test_text_corpus_blank_line_and_regex_separators(tmp_path):
    path = write(tmp_path, "wiki.txt", "Doc one, sentence one.\nSentence two.\n\n \nDoc two.\n\n")
    frame = load_text_corpus(path, document_separator="blank_line")
    assert frame.text.tolist() == ["Doc one, sentence one.\nSentence two.", "Doc two."]
    assert frame.source.tolist() == ["wiki.txt", "wiki.txt"]
    marked = write(tmp_path, "marked.txt", "A.\n\nA again.\n=====\nB.\n")
    by_rule = load_text_corpus(marked, document_separator=re.compile(r"\n=+\n"))
    assert by_rule.text.tolist() == ["A.\n\nA again.", "B."]
    with pytest.raises(ValueError, match="document_separator='paragraph' is not supported"):
        load_text_corpus(path, document_separator="paragraph")


def test_text_corpus_missing_and_undecodable_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"empty: no files matching '\*\.txt'"):
        (tmp_path / "empty").mkdir()
        load_text_corpus(tmp_path / "empty")
    latin = write(tmp_path, "latin.txt", "ok\ncaf\u00e9\n", encoding="latin-1")
    with pytest.raises(ValueError, match=r"latin\.txt, line 2: not valid UTF-8"):
        load_text_corpus(latin)


@pytest.mark.parametrize("load", [load_squad, load_conll, load_swag, load_text_corpus,
                                  lambda path: load_glue_tsv(path, "RTE")])
def test_missing_file_names_the_path(tmp_path, load):
    with pytest.raises(FileNotFoundError, match=r"nowhere\.data: no such file"):
        load(tmp_path / "nowhere.data")
