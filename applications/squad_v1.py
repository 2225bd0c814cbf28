"""SQuAD v1.1: fine-tune all_minilm_l6_v2_en to answer questions with a span of the context.

Only the official dev file is available offline, so it is split by article (articles in file order):
train on 3,000 questions of articles 0-37 (all of them shuffled with seed 0, then the first 3,000),
test on the first 1,000 questions of articles 38-47. One epoch, batch 16, windows of 256 tokens
sharing 128 (doc_stride), AdamW 5e-5 with weight decay 0.01, 10% warmup then linear decay.
Reference, HF transformers `BertForQuestionAnswering` with the same split and settings:
EM 0.115, F1 0.218.

Run: `.venv/bin/python applications/squad_v1.py [dev-v1.1.json]`; saves `runs/squad_v1.keras`.
"""

from recipe_tools import SHARED_DATA, Phases, data_argument, save_run  # first: it quiets TensorFlow's log

import pandas as pd

import kerasbert as kb
from kerasbert.data import load_squad

TRAIN_ARTICLES = 38


def split_by_article(questions, train_articles, train_count=3000, test_count=1000, seed=0):
    """Train: `train_count` shuffled questions of the first `train_articles` articles; held out: the
    rest of those articles' questions; test: the first `test_count` questions of the others."""
    article = pd.factorize(questions["title"])[0]
    shuffled = questions[article < train_articles].sample(frac=1.0, random_state=seed)
    return shuffled.head(train_count), shuffled.iloc[train_count:], questions[article >= train_articles].head(test_count)


def main(path):
    phases = Phases()
    train, _, test = split_by_article(load_squad(path), TRAIN_ARTICLES)
    answerer = kb.BertQuestionAnswerer.from_preset("all_minilm_l6_v2_en", sequence_length=256, doc_stride=128)
    answerer.fit(train, batch_size=16, epochs=1, verbose=2)
    phases.mark("training")
    results = answerer.evaluate(test, verbose=0)
    phases.mark("evaluation")
    print(f"SQuAD v1.1, trained on {len(train)} questions (articles 0-{TRAIN_ARTICLES - 1}), "
          f"tested on {results['total']} (articles {TRAIN_ARTICLES}+)")
    print(f"EM {results['exact_match']:.3f}  F1 {results['f1']:.3f}   (HF reference: EM 0.115, F1 0.218)")
    print(phases)
    save_run(answerer, "squad_v1.keras")


if __name__ == "__main__":
    main(data_argument(SHARED_DATA / "squad" / "dev-v1.1.json"))
