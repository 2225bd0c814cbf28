"""evaluate_retrieval on real text: SQuAD v1.1 dev questions against the paragraphs of their articles, encoded by
the real all-MiniLM-L6-v2; the run it scores is the one `retrieve` gives, and trec_eval scores it the same."""

import os
from pathlib import Path

import pytest

from kerasbert.data.squad import load_squad
from kerasbert.metrics.retrieval import retrieval_scores
from kerasbert.retrieval import ExactIndex, evaluate_retrieval, retrieve
from kerasbert.tasks import BertTextEncoder

pytrec_eval = pytest.importorskip("pytrec_eval")

SHARED_DATA = Path(os.environ.get("KERASBERT_SHARED_DATA")
                   or Path(__file__).resolve().parents[2].parent / "shared" / "data")


@pytest.fixture(scope="module")
def squad_retrieval():
    """(questions, paragraphs, qrels) of two dev articles: 120 questions, every paragraph of the articles."""
    path = SHARED_DATA / "squad" / "dev-v1.1.json"
    if not path.is_file():
        pytest.skip(f"SQuAD not found at {path} (set KERASBERT_SHARED_DATA)")
    dev = load_squad(path)
    dev = dev[dev["title"].isin(dev["title"].unique()[1:3])]
    paragraphs = {f"p{i}": text for i, text in enumerate(dev["context"].unique())}
    paragraph_id = {text: key for key, text in paragraphs.items()}
    asked = dev.groupby("context").head(2).head(120)  # two questions per paragraph
    questions = dict(zip(asked["id"], asked["question"]))
    qrels = {row.id: {paragraph_id[row.context]: 1} for row in asked.itertuples()}
    return questions, paragraphs, qrels


def test_real_questions_find_their_paragraphs_and_the_scores_are_trec_evals(minilm_path, squad_retrieval):
    questions, paragraphs, qrels = squad_retrieval
    encoder = BertTextEncoder.from_preset(str(minilm_path))
    scores = evaluate_retrieval(encoder, questions, paragraphs, qrels)
    assert scores["recall@10"] > 0.8 and scores["mrr@10"] > 0.5  # MiniLM off the shelf, no training
    assert scores["recall@1"] <= scores["recall@10"] <= scores["recall@100"] == 1.0  # fewer than 100 paragraphs

    index = ExactIndex(encoder.backbone.hidden_dim).add(encoder.encode(list(paragraphs.values()), verbose=0),
                                                       ids=list(paragraphs))
    run = retrieve(encoder, questions, index, top_k=100)
    assert retrieval_scores(run, qrels) == pytest.approx(scores, abs=1e-6)
    assert evaluate_retrieval(encoder, questions, None, qrels, index=index) == pytest.approx(scores, abs=1e-6)
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10"}).evaluate(run)
    assert scores["ndcg@10"] == pytest.approx(sum(q["ndcg_cut_10"] for q in trec.values()) / len(trec), abs=1e-9)
    assert scores["recall@10"] == pytest.approx(sum(q["recall_10"] for q in trec.values()) / len(trec), abs=1e-9)

    with pytest.raises(ValueError, match="corpus .* or an index"):
        evaluate_retrieval(encoder, questions, paragraphs, qrels, index=index)
    with pytest.raises(TypeError, match="queries must be"):
        evaluate_retrieval(encoder, ["a list"], paragraphs, qrels)
