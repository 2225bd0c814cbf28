"""SQuAD question generation with BERT, UniLM-style: answer + its sentence in, the question out.

Fine-tunes all_minilm_l6_v2_en as a `BertSeq2Seq` (seq2seq attention mask, 70% of every question masked,
the masked-LM head fresh: the checkpoint has none) on the official SQuAD v1.1 dev file, split by article
(articles in file order): train on every question of articles 0-37 (8,576 whose question has at most 32
tokens, shuffled with seed 0), test on the first 1,000 questions of articles 38-47. Source:
`answer [SEP] sentence`, the sentence of the context that holds the answer (several when the answer crosses
a sentence end); target: the question. Six epochs, batch 16, AdamW 3e-4, 10% warmup then linear decay; at
most 64 source and 32 question tokens. Generation: greedy and beam search (4 beams), each also with no
repeated trigram (UniLM's `forbid_duplicate_ngrams`), at most 32 tokens, with the key/value cache.

Metrics on the lower-cased texts: corpus BLEU-4 (`sacrebleu`, its 13a tokenisation) and mean ROUGE-L F1
(`rouge-score`), against the baseline that copies the answer's sentence as the question.

MASS row (`--mass-epochs 2`): before fine-tuning, the model is pre-trained as MASS does (Song et al. 2019) on the
plain sentences of the training articles' paragraphs (no question seen): each sentence of 4-48 words loses half its
words as one masked fragment, which the model writes back (`kb.data.mass_examples`, new fragments every epoch),
then fine-tuned exactly as above.

Run: `.venv/bin/python applications/question_generation.py [dev-v1.1.json] [--mass-epochs N]`; saves
`runs/question_generation.keras` (`question_generation_mass.keras`) after training. `--saved runs/question_generation.keras` scores a saved model
instead of training one. `question_generation_bert2bert.py` is HF's encoder-decoder on the same split.

Measured 2026-11-25 (2-core CPU, shared; 1,885 s of training, final loss 2.99), BLEU-4 / ROUGE-L: copy the
answer's sentence 6.03 / 24.86; greedy 5.60 / 28.67, greedy with no repeated trigram 6.70 / 30.25, beam 4
6.70 / 29.28, beam 4 with no repeated trigram 7.89 / 31.01 (bert2bert, same split: 4.11-5.08 / 25.23-26.08).
With `--mass-epochs 2` (2026-11-28, 1,531 s of MASS, then the same fine-tuning, final loss 2.97): greedy 6.46 / 29.13,
no repeated trigram 7.38 / 30.26, beam 4 7.12 / 29.44, beam 4 with no repeated trigram 7.88 / 30.77.
"""

from recipe_tools import SHARED_DATA, Phases, save_run  # first: it quiets TensorFlow's log

import argparse
import re
import time
from pathlib import Path

import keras
import pandas as pd
import sacrebleu
from rouge_score import rouge_scorer

import kerasbert as kb
from kerasbert.data import load_squad

TRAIN_ARTICLES = 38
TEST_QUESTIONS = 1000
EPOCHS = 6
MAX_SOURCE_LENGTH, MAX_TARGET_LENGTH = 64, 32
DECODINGS = {"greedy": dict(beam_size=1), "greedy, no repeated 3-gram": dict(beam_size=1, no_repeat_ngram_size=3),
             "beam 4": dict(beam_size=4), "beam 4, no repeated 3-gram": dict(beam_size=4, no_repeat_ngram_size=3)}
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


def context_sentences(questions, titles):
    """The sentences (4-48 words) of the training articles' paragraphs, each once, in file order."""
    article = pd.factorize(titles)[0]
    contexts = questions["context"][article < TRAIN_ARTICLES].drop_duplicates()
    sentences = [sentence.strip() for context in contexts for sentence in SENTENCE_END.split(context)]
    return [sentence for sentence in sentences if 4 <= len(sentence.split()) <= 48]


def mass_pretrain(model, sentences, epochs, phases):
    """MASS pre-training of `model` on `sentences`: `epochs` passes (new fragments each), shuffled together into
    one fit (one warmup and decay)."""
    pairs = pd.concat([kb.data.mass_examples(sentences, seed=epoch) for epoch in range(epochs)], ignore_index=True)
    model.fit(fits(model, pairs), epochs=1, batch_size=16, learning_rate=3e-4, verbose=2)
    phases.mark(f"MASS pre-training ({len(sentences)} sentences, {epochs} epochs)")


def fits(model, frame):
    """The rows whose question has at most `MAX_TARGET_LENGTH` tokens (longer ones cannot be trained on)."""
    lengths = model.tokenizer(frame["target"].tolist()).row_lengths().numpy()
    return frame[lengths <= MAX_TARGET_LENGTH]


def score_decodings(system, write, test, decodings, train_time, phases):
    """The results table's rows (system, BLEU-4, ROUGE-L, examples, train time): the copy baseline, then `system`
    with each of `decodings` (name: options of `write(sources, **options) -> texts`); and the texts written."""
    references = test["target"].tolist()
    rows = [("copy the answer's sentence", *scores(test["sentence"].tolist(), references), len(test), "-")]
    generated = {}
    for name, options in decodings.items():
        generated[name] = write(test["source"].tolist(), **options)
        rows.append((f"{system} {name}", *scores(generated[name], references), len(test), train_time))
        phases.mark(name)
    return rows, generated


def report(test, rows, generated, train_count, epochs):
    """Print the results table (`rows`: system, BLEU-4, ROUGE-L, examples, train time) and three examples."""
    print(f"SQuAD v1.1 question generation: trained on {train_count} questions (articles 0-{TRAIN_ARTICLES - 1}, "
          f"{epochs} epochs), tested on {len(test)} (articles {TRAIN_ARTICLES}+)")
    print(pd.DataFrame(rows, columns=["system", "BLEU-4", "ROUGE-L", "examples", "train time"])
          .to_string(index=False, float_format=lambda value: f"{value:.2f}"))
    for row in range(3):
        print(f"\nsource:    {test['source'].iloc[row]}\nquestion:  {test['target'].iloc[row]}")
        for name, texts in generated.items():
            print(f"{name + ':':<32}{texts[row]}")


def main(path, saved=None, mass_epochs=0):
    phases = Phases()
    questions = load_squad(path)
    train, test = split_by_article(question_generation_examples(questions), questions["title"])
    if saved is None:
        model = kb.BertSeq2Seq.from_preset("all_minilm_l6_v2_en", max_source_length=MAX_SOURCE_LENGTH,
                                        max_target_length=MAX_TARGET_LENGTH)
        train = fits(model, train)
        start = time.perf_counter()
        if mass_epochs:
            mass_pretrain(model, context_sentences(questions, questions["title"]), mass_epochs, phases)
        model.fit(train[["source", "target"]], epochs=EPOCHS, batch_size=16, learning_rate=3e-4, verbose=2)
        train_time = f"{time.perf_counter() - start:.0f} s"
        phases.mark("training")
        save_run(model, "question_generation_mass.keras" if mass_epochs else "question_generation.keras")
    else:
        model, train_time = keras.saving.load_model(saved), f"({saved})"
        train = fits(model, train)
    system = f"BertSeq2Seq (MASS {mass_epochs} epochs)" if mass_epochs else "BertSeq2Seq"
    rows, generated = score_decodings(system, model.generate, test, DECODINGS, train_time, phases)
    report(test, rows, generated, len(train), EPOCHS)
    print(phases)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=SHARED_DATA / "squad" / "dev-v1.1.json")
    parser.add_argument("--saved", type=Path, help="score this saved BertSeq2Seq (.keras) instead of training one")
    parser.add_argument("--mass-epochs", type=int, default=0,
                        help="MASS pre-training passes over the training articles' sentences before fine-tuning")
    arguments = parser.parse_args()
    main(arguments.data, arguments.saved, arguments.mass_epochs)
