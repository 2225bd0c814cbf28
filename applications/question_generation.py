"""SQuAD question generation with BERT, UniLM-style: answer + its sentence in, the question out.

Fine-tunes all_minilm_l6_v2_en as a `BertSeq2Seq` (seq2seq attention mask, 70% of every question masked,
the masked-LM head fresh: the checkpoint has none) on the official SQuAD v1.1 dev file, split by article
(articles in file order): train on every question of articles 0-37 (8,576 whose question has at most 32
tokens, shuffled with seed 0), test on the first 1,000 questions of articles 38-47. Source: `answer [SEP] sentence`, the sentence of the context that
holds the answer (several when the answer crosses a sentence end); target: the question. Two epochs,
batch 16, AdamW 3e-4, 10% warmup then linear decay; at most 64 source and 32 question tokens. Generation:
greedy and beam search (4 beams), at most 32 tokens, with the key/value cache.

Metrics on the lower-cased texts: corpus BLEU-4 (`sacrebleu`, its 13a tokenisation) and mean ROUGE-L F1
(`rouge-score`), against the baseline that copies the answer's sentence as the question.

Run: `.venv/bin/python applications/question_generation.py [dev-v1.1.json]`; saves
`runs/question_generation.keras`.
"""

from recipe_tools import SHARED_DATA, Phases, data_argument, save_run  # first: it quiets TensorFlow's log

import re
import time

import pandas as pd
import sacrebleu
from rouge_score import rouge_scorer

from kerasbert.applications.bert_seq2seq import BertSeq2Seq
from kerasbert.data import load_squad

TRAIN_ARTICLES = 38
TEST_QUESTIONS = 1000
MAX_SOURCE_LENGTH, MAX_TARGET_LENGTH = 64, 32
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def answer_sentence(context, start, answer):
    """The sentence(s) of `context` holding the answer at character `start`: split after `.`, `!` or `?`
    followed by white space."""
    bounds = [0] + [match.end() for match in SENTENCE_END.finditer(context)] + [len(context)]
    first = max(b for b in bounds if b <= start)
    last = min(b for b in bounds if b >= start + len(answer))
    return context[first:last].strip()


def question_generation_examples(questions):
    """One row per question: `source` (answer [SEP] sentence), `target` (the question), `sentence`."""
    sentences = [answer_sentence(row.context, row.answer_starts[0], row.answer_texts[0])
                 for row in questions.itertuples()]
    answers = [texts[0] for texts in questions["answer_texts"]]
    return pd.DataFrame({"source": [f"{answer} [SEP] {sentence}" for answer, sentence in zip(answers, sentences)],
                         "target": questions["question"].str.strip().tolist(), "sentence": sentences},
                        index=questions.index)


def split_by_article(examples, titles, seed=0):
    """Train: the questions of the first `TRAIN_ARTICLES` articles, shuffled; test: the first `TEST_QUESTIONS`
    questions of the others."""
    article = pd.factorize(titles)[0]
    train = examples[article < TRAIN_ARTICLES].sample(frac=1.0, random_state=seed)
    return train, examples[article >= TRAIN_ARTICLES].head(TEST_QUESTIONS)


def scores(hypotheses, references):
    """Corpus BLEU-4 (sacrebleu, 0-100) and mean ROUGE-L F1 (0-100) of lower-cased texts."""
    bleu = sacrebleu.corpus_bleu(hypotheses, [references], lowercase=True).score
    scorer = rouge_scorer.RougeScorer(["rougeL"])  # lower-cases and splits on non-alphanumerics itself
    rouge = sum(scorer.score(reference, hypothesis)["rougeL"].fmeasure
                for hypothesis, reference in zip(hypotheses, references)) / len(references)
    return bleu, 100 * rouge


def fits(model, frame):
    """The rows whose question has at most `MAX_TARGET_LENGTH` tokens (longer ones cannot be trained on)."""
    lengths = model.tokenizer(frame["target"].tolist()).row_lengths().numpy()
    return frame[lengths <= MAX_TARGET_LENGTH]


def main(path):
    phases = Phases()
    questions = load_squad(path)
    train, test = split_by_article(question_generation_examples(questions), questions["title"])
    model = BertSeq2Seq.from_preset("all_minilm_l6_v2_en", max_source_length=MAX_SOURCE_LENGTH,
                                    max_target_length=MAX_TARGET_LENGTH)
    train = fits(model, train)
    start = time.perf_counter()
    model.fit(train[["source", "target"]], epochs=2, batch_size=16, learning_rate=3e-4, verbose=2)
    train_time = time.perf_counter() - start
    phases.mark("training")
    references = test["target"].tolist()
    rows = [("copy the answer's sentence", *scores(test["sentence"].tolist(), references), len(test), "-")]
    generated = {}
    for name, beam_size in [("BertSeq2Seq greedy", 1), ("BertSeq2Seq beam 4", 4)]:
        generated[name] = model.generate(test["source"].tolist(), beam_size=beam_size)
        rows.append((name, *scores(generated[name], references), len(test), f"{train_time:.0f} s"))
        phases.mark(name.split()[-2] + " " + name.split()[-1])
    print(f"SQuAD v1.1 question generation: trained on {len(train)} questions (articles 0-{TRAIN_ARTICLES - 1}, "
          f"2 epochs), tested on {len(test)} (articles {TRAIN_ARTICLES}+)")
    print(pd.DataFrame(rows, columns=["system", "BLEU-4", "ROUGE-L", "examples", "train time"])
          .to_string(index=False, float_format=lambda value: f"{value:.2f}"))
    for row in range(3):
        print(f"\nsource:    {test['source'].iloc[row]}\nquestion:  {references[row]}\n"
              f"greedy:    {generated['BertSeq2Seq greedy'][row]}\nbeam 4:    {generated['BertSeq2Seq beam 4'][row]}")
    print(phases)
    save_run(model, "question_generation.keras")


if __name__ == "__main__":
    main(data_argument(SHARED_DATA / "squad" / "dev-v1.1.json"))
