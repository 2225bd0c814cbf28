"""Knowledge distillation on UCI sentiment (issue 20): smaller students learn from a fine-tuned all-MiniLM-L6-v2.

Protocol: the teacher is `sentiment_uci.py`'s model (all_minilm_l6_v2_en fine-tuned 1 epoch on the 2,000 Amazon and
Yelp reviews, batch 32, at most 128 tokens, seed 0). Each student is trained on the same reviews with the same
epochs, rate and seed, on the labels only (its own `fit`) and distilled (`Distiller`, alpha 0.5, temperature 2:
half soft targets, half labels), also with one augmented, unlabelled copy of every review for the soft targets
(Tang et al. 2019: each word masked with p 0.1, then with p 0.25 only a random 1-5 word n-gram kept):
- "MiniLM blocks 0,2,4": three of the teacher's six blocks with its embeddings, pooler and head
  (`student_from_teacher`, DistilBERT's initialisation), 3 epochs at 5e-5; also distilled with TinyBERT's
  hidden-state MSE (hidden_weight 1);
- "bert_mini": Google's BERT-mini shape (4 layers, hidden 256, 4 heads). Its weights download from the HF hub, which
  this machine cannot reach, so it starts from random weights (`load_weights=False`), 8 epochs at 1e-4;
- "MobileBERT-tiny shape": MobileBERT-TINY's blocks (Sun et al. 2020, table 1: 24 blocks 512 wide between blocks,
  128 inside, 4 heads, 2 stacked feed-forward networks of 512, NoNorm, trigram embedding of 128) on the teacher's
  vocabulary and tokenizer, from random weights (no MobileBERT weights offline), 8 epochs at 1e-4. Its 24 narrow
  blocks make it the slowest student here: run it alone (`--students "MobileBERT-tiny shape (random init)"`, about an
  hour on 2 cores: 3,861 s on 2026-11-29).
Each model is scored on the 1,000 IMDb reviews. Inference is `predict` on those raw texts (tokenising included),
batch 32, timed in turns over 5 rounds after a warm-up: the median CPU time of the process is the model's cost (on a
machine shared with other jobs it varies by about 3%, the wall time by up to 2x), the best wall time gives texts
per second. DistilBERT (Sanh et al. 2019) reports 97% of BERT's GLUE score at 60% of its inference time.

Run: `.venv/bin/python applications/distill_sentiment.py [--students NAME ...]` (about 20 minutes on 2 CPU cores for
the MiniLM and bert_mini students; the teacher is always trained).
"""

import argparse
import time

from recipe_tools import Phases, save_run  # before kerasbert: it quiets TensorFlow's log

import keras
import numpy as np

import kerasbert as kb

LABELS = {0: "negative", 1: "positive"}
SEED = 0
BATCH_SIZE = 32
ALPHA, TEMPERATURE = 0.5, 2.0
TIMING_ROUNDS = 5
STUDENTS = {  # name: (how to build it from the teacher, epochs, learning rate, the distillations to compare)
    "MiniLM blocks 0,2,4": (
        lambda teacher: kb.student_from_teacher(teacher, layers=[0, 2, 4], output_hidden_states=True), 3, 5e-5,
        {"distilled": ({}, False), "distilled + hidden states": ({"hidden_weight": 1.0}, False),
         "distilled + augmented text": ({}, True)}),
    "bert_mini (random init)": (
        lambda teacher: kb.BertClassifier.from_preset("bert_mini_en_uncased", load_weights=False,
                                                      labels=teacher.labels, sequence_length=128),
        8, 1e-4, {"distilled": ({}, False), "distilled + augmented text": ({}, True)}),
    "MobileBERT-tiny shape (random init)": (
        lambda teacher: kb.BertClassifier(mobilebert_tiny(teacher.preprocessor.tokenizer.vocabulary_size()),
                                          teacher.preprocessor, labels=teacher.labels),
        8, 1e-4, {"distilled": ({}, False), "distilled + augmented text": ({}, True)}),
}


def mobilebert_tiny(vocabulary_size):
    """MobileBERT-TINY's shape (Sun et al. 2020, table 1) from random weights: 24 bottleneck blocks, 2 FFNs each."""
    return kb.MobileBertBackbone(vocabulary_size=vocabulary_size, num_layers=24, num_heads=4, hidden_dim=512,
                                 intermediate_dim=512, embedding_dim=128, intra_bottleneck_dim=128,
                                 num_feedforward_networks=2, max_sequence_length=512)


def uci():
    splits = kb.data.load_dataset("uci_sentiment")
    return [splits[name][["text", "label"]].assign(label=lambda d: d["label"].map(LABELS))
            for name in ("train", "test")]


def augmented(texts, seed=SEED, mask_probability=0.1, ngram_probability=0.25):
    """One unlabelled variant of each text (Tang et al. 2019): words masked, sometimes only an n-gram kept."""
    rng = np.random.default_rng(seed)
    variants = []
    for text in texts:
        words = ["[MASK]" if rng.random() < mask_probability else word for word in text.split()]
        if rng.random() < ngram_probability and len(words) > 1:
            length = int(rng.integers(1, min(5, len(words)) + 1))
            start = int(rng.integers(0, len(words) - length + 1))
            words = words[start:start + length]
        variants.append(" ".join(words))
    return variants


def timed(fit):
    start = time.perf_counter()
    fit()
    return time.perf_counter() - start


def inference_costs(models, texts):
    """Per model, the seconds of `predict` on `texts` (batch 32) over `TIMING_ROUNDS` rounds taken in turns: the
    median CPU time of this process (what the model costs; steady under other jobs' load) and the best wall time."""
    for model in models:
        model.predict(texts, batch_size=BATCH_SIZE, verbose=0)  # warm-up: traces the inference function
    cpu, wall = [[] for _ in models], [[] for _ in models]
    for _ in range(TIMING_ROUNDS):
        for index, model in enumerate(models):
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            model.predict(texts, batch_size=BATCH_SIZE, verbose=0)
            cpu[index].append(time.process_time() - cpu_start)
            wall[index].append(time.perf_counter() - wall_start)
    return [float(np.median(seconds)) for seconds in cpu], [min(seconds) for seconds in wall]


def main(students):
    phases = Phases()
    train, test = uci()
    unlabelled = augmented(train["text"])
    keras.utils.set_random_seed(SEED)
    teacher = kb.BertClassifier.from_preset("all_minilm_l6_v2_en", labels=list(LABELS.values()), sequence_length=128)
    runs = [("teacher all_minilm_l6_v2_en", teacher,
             timed(lambda: teacher.fit(train, epochs=1, batch_size=BATCH_SIZE, seed=SEED, verbose=0)))]
    phases.mark("teacher")
    for student_name in students:
        build, epochs, learning_rate, distillations = STUDENTS[student_name]
        options = {"epochs": epochs, "batch_size": BATCH_SIZE, "learning_rate": learning_rate, "seed": SEED,
                   "verbose": 0}
        keras.utils.set_random_seed(SEED)
        student = build(teacher)
        runs.append((f"{student_name}, labels only", student, timed(lambda: student.fit(train, **options))))
        for kind, (settings, with_unlabelled) in distillations.items():
            keras.utils.set_random_seed(SEED)
            student = build(teacher)
            distiller = kb.Distiller(teacher, student, alpha=ALPHA, temperature=TEMPERATURE, **settings)
            seconds = timed(lambda: distiller.fit(train, unlabelled=unlabelled if with_unlabelled else None, **options))
            runs.append((f"{student_name}, {kind}", student, seconds))
        phases.mark(student_name)
    if "MiniLM blocks 0,2,4" in students:
        save_run(runs[2][1], "distill_sentiment_student.keras")  # MiniLM blocks 0,2,4, distilled

    accuracies = [model.evaluate(test, verbose=0)["accuracy"] for _, model, _ in runs]
    phases.mark("evaluation")
    cpu_seconds, wall_seconds = inference_costs([model for _, model, _ in runs], test["text"].tolist())
    phases.mark("timing")
    batches = -(-len(test) // BATCH_SIZE)
    print(f"\nKnowledge distillation, UCI sentiment (train 2,000 Amazon + Yelp reviews, test 1,000 IMDb; "
          f"alpha {ALPHA}, T {TEMPERATURE}, seed {SEED}; inference: predict on the 1,000 raw test texts in batches of "
          f"32, {TIMING_ROUNDS} rounds: median CPU time, best wall time)")
    print("| model | layers | params | test accuracy | train s | inference CPU ms / batch | texts / s (wall) "
          "| % of teacher accuracy | % of teacher CPU time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (name, model, train_seconds), accuracy, cpu, wall in zip(runs, accuracies, cpu_seconds, wall_seconds):
        print(f"| {name} | {model.backbone.num_layers} | {model.count_params():,} | {accuracy:.3f} "
              f"| {train_seconds:.0f} | {1000 * cpu / batches:.1f} | {len(test) / wall:.0f} "
              f"| {100 * accuracy / accuracies[0]:.1f} | {100 * cpu / cpu_seconds[0]:.0f} |")
    print("DistilBERT (Sanh et al. 2019): 97% of BERT-base's GLUE score at 60% of its inference time.")
    print(phases)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", nargs="+", choices=list(STUDENTS), default=list(STUDENTS),
                        help="the students to train (default: all)")
    main(parser.parse_args().students)
