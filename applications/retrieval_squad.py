"""SQuAD v1.1 as passage retrieval: each question must find its paragraph among all paragraphs of the held-out
articles. BM25, all-MiniLM-L6-v2 off the shelf, the same encoder fine-tuned with multiple-negatives ranking on the
training articles, and retrieve-then-rerank with a cross-encoder trained on the training articles.

Split by article as `squad_v1.py` (only the dev file is offline): articles 0-37 train, 38-47 test. Encoder
training: `TRAIN_QUESTIONS` (1,000) shuffled (question, paragraph) pairs of the training articles, 1 epoch, batch 32
(no batch repeats a paragraph), AdamW with the default rate, scale 20. Reranker: MiniLM with a new head,
listwise rows (question, its paragraph, 3 BM25 hard negatives of the training articles) for `RERANKER_QUESTIONS`
(2,400) questions, 1 epoch, batch 8, peak rate 1e-4; it reranks the fine-tuned encoder's top 20 for the first
`RERANKED_QUERIES` (400) test questions (the table gives the encoder alone on those questions too). Metrics as
trec_eval (`kb.metrics.retrieval_scores`). About an hour on 2 cores (the reranker trains at ~8 sequences/s).

Run: `.venv/bin/python applications/retrieval_squad.py [dev-v1.1.json]`.
"""

from recipe_tools import SHARED_DATA, Phases, data_argument  # first: it quiets TensorFlow's log

import time

import bm25s
import pandas as pd

import kerasbert as kb
from kerasbert.data import load_squad

TRAIN_ARTICLES, TRAIN_QUESTIONS, RERANKER_QUESTIONS, RERANKED_QUERIES, RERANK_DEPTH = 38, 1000, 2400, 400, 20
RERANKER_RATE = 1e-4  # a new head: at the default 5e-5, 50 steps stayed at chance (ln 4)
METRICS = ("ndcg@10", "mrr@10", "map@100", "recall@1", "recall@10", "recall@100")


def retrieval_split(questions):
    """(train questions, test queries {id: question}, test corpus {id: paragraph}, test qrels), split by article;
    a paragraph's id is its position among the distinct paragraphs of the file."""
    questions = questions.assign(article=pd.factorize(questions["title"])[0],
                                 paragraph=lambda frame: "p" + pd.Series(pd.factorize(frame["context"])[0],
                                                                         index=frame.index).astype(str))
    train, test = questions[questions["article"] < TRAIN_ARTICLES], questions[questions["article"] >= TRAIN_ARTICLES]
    corpus = dict(zip(test["paragraph"], test["context"]))
    return (train.sample(frac=1.0, random_state=0), dict(zip(test["id"], test["question"])), corpus,
            {question: {paragraph: 1} for question, paragraph in zip(test["id"], test["paragraph"])})


def bm25_run(queries, corpus, depth=100):
    """`{query id: {paragraph id: score}}` of BM25 (bm25s, Lucene's scoring, English stop words)."""
    ids = list(corpus)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(list(corpus.values()), show_progress=False), show_progress=False)
    hits, scores = retriever.retrieve(bm25s.tokenize(list(queries.values()), show_progress=False),
                                      k=min(depth, len(ids)), show_progress=False)
    return {query: {ids[i]: float(s) for i, s in zip(row, row_scores)}
            for query, row, row_scores in zip(queries, hits, scores)}


def hard_negatives(train, count=3):
    """Listwise rows of the training questions: the paragraph, and the `count` best BM25 paragraphs of the
    training articles that are not it."""
    corpus = dict(zip(train["paragraph"], train["context"]))
    run = bm25_run(dict(zip(train["id"], train["question"])), corpus, depth=count + 1)
    negatives = [[corpus[p] for p in run[question] if p != paragraph][:count]
                 for question, paragraph in zip(train["id"], train["paragraph"])]
    return pd.DataFrame({"query": train["question"].tolist(), "positive": train["context"].tolist(),
                         "negative": negatives})


def reranked(reranker, run, queries, corpus, depth):
    """Each query's `depth` best paragraphs of `run`, scored again by `reranker`."""
    rows = [(query, paragraph) for query, hits in run.items()
            for paragraph in sorted(hits, key=hits.get, reverse=True)[:depth]]
    pairs = pd.DataFrame({"query": [queries[q] for q, _ in rows], "passage": [corpus[p] for _, p in rows]})
    scores = reranker.predict(pairs, batch_size=64, verbose=0)["score"].to_numpy()
    result = {}
    for (query, paragraph), score in zip(rows, scores):
        result.setdefault(query, {})[paragraph] = float(score)
    return result


def report(rows, name, scores):
    """Add a row to the table and print it at once (a run takes a while on 2 cores)."""
    rows[name] = scores
    print(f"{name}: " + ", ".join(f"{metric} {value:.3f}" for metric, value in scores.items()), flush=True)


def main(path):
    phases = Phases()
    train, queries, corpus, qrels = retrieval_split(load_squad(path))
    print(f"SQuAD v1.1 retrieval: {len(queries)} questions, {len(corpus)} paragraphs of articles "
          f"{TRAIN_ARTICLES}-47; training questions of articles 0-{TRAIN_ARTICLES - 1}: {len(train)}", flush=True)
    rows = {}
    report(rows, "BM25 (bm25s)", kb.metrics.retrieval_scores(bm25_run(queries, corpus), qrels, METRICS))
    phases.mark("BM25")
    encoder = kb.BertTextEncoder.from_preset("all_minilm_l6_v2_en")
    report(rows, "all-MiniLM-L6-v2", kb.retrieval.evaluate_retrieval(encoder, queries, corpus, qrels, METRICS))
    phases.mark("off the shelf")
    pairs = train.head(TRAIN_QUESTIONS)
    encoder.fit(pd.DataFrame({"anchor": pairs["question"], "positive": pairs["context"]}), epochs=1, batch_size=32,
                verbose=2)
    phases.mark("encoder training")
    start = time.perf_counter()
    index = kb.retrieval.ExactIndex(encoder.backbone.hidden_dim).add(encoder.encode(list(corpus.values()),
                                                                                    verbose=0), ids=list(corpus))
    encoded = time.perf_counter()
    run = kb.retrieval.retrieve(encoder, queries, index, top_k=100)
    speed = (f"{len(corpus) / (encoded - start):.1f} paragraphs/s encoded, "
             f"{len(queries) / (time.perf_counter() - encoded):.1f} questions/s encoded and searched (top 100)")
    report(rows, f"fine-tuned ({TRAIN_QUESTIONS} pairs, MNRL)", kb.metrics.retrieval_scores(run, qrels, METRICS))
    print(speed, flush=True)
    phases.mark("fine-tuned evaluation")
    reranker = kb.BertCrossEncoder.from_preset("all_minilm_l6_v2_en", sequence_length=256)
    reranker.fit(hard_negatives(train.head(RERANKER_QUESTIONS)), epochs=1, batch_size=8, learning_rate=RERANKER_RATE,
                 verbose=2)
    phases.mark("reranker training")
    subset = dict(list(queries.items())[:RERANKED_QUERIES])
    subset_qrels = {query: qrels[query] for query in subset}
    subset_run = {query: run[query] for query in subset}
    report(rows, f"fine-tuned, first {RERANKED_QUERIES} questions",
           kb.metrics.retrieval_scores(subset_run, subset_qrels, METRICS))
    report(rows, f"+ cross-encoder rerank of the top {RERANK_DEPTH}", kb.metrics.retrieval_scores(
        reranked(reranker, subset_run, subset, corpus, RERANK_DEPTH), subset_qrels, METRICS))
    phases.mark("reranking")
    table = pd.DataFrame(rows).T[list(METRICS)]
    print(table.to_markdown(floatfmt=".3f"))
    print(phases)


if __name__ == "__main__":
    main(data_argument(SHARED_DATA / "squad" / "dev-v1.1.json"))
