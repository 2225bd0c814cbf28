"""ERNIE's knowledge masking on Chinese (issue 37): continued pre-training with entity masking against character
masking, then MSRA named-entity recognition.

Protocol: all_minilm_l6_v2_en (its uncased WordPiece vocabulary holds the common CJK characters, one token each;
its masked-LM head is not in the checkpoint, so it starts untrained, tied to the token embedding) is pre-trained
further with masked LM only (as `continue_pretraining_austen.py`: 128-token segments, 15% masking 80/10/10,
1 epoch, batch 32, AdamW 1e-4 with 10% warmup, seed 0) on the text of MSRA training sentences that the NER step
never sees (documents of 20 consecutive sentences):
- "character masking": whole-word masking, where each Chinese character is its own word (BERT-Chinese's);
- "entity masking": the same, and each document's tagged names (PER, LOC, ORG runs of its BIO tags) are
  knowledge units masked whole (ERNIE, Sun et al. 2019, section 3.2; `BertPretrainer(columns={"units": ...})`).
Then the original and both pre-trained backbones are fine-tuned as token classifiers (characters as words) on the
first `--ner-sentences` MSRA training sentences (2 epochs, batch 32, at most 128 tokens, the default AdamW 5e-5)
and scored with seqeval's entity F1 on the MSRA test set (3,442 sentences; `--test-sentences` for fewer).

Measured 2026-11-28 (defaults; 6,331 s on 2 cores shared with other jobs): entity F1 0.0000 without further
pre-training, 0.0182 after character masking, 0.0887 after entity masking; but 2 epochs of 3,000 sentences at 5e-5
leave every tagger close to all-`O` (token accuracy 0.93). 2026-11-29 with `--ner-epochs 3 --ner-learning-rate 2e-4`
(1,954 s): 0.1695, 0.1656 and 0.1688: with taggers that learn, entity masking is level with no further
pre-training and 0.3 point above character masking.

Run: `.venv/bin/python applications/ernie_masking_chinese.py [--pretrain-sentences 12000] [--ner-sentences 3000]`
"""

import argparse

from recipe_tools import SHARED_DATA, Phases  # first: it quiets TensorFlow's log

import keras
import pandas as pd

import kerasbert as kb

PRESET = "all_minilm_l6_v2_en"
DOCUMENT_SENTENCES = 20
MASKING = {"character masking": None, "entity masking": "entities"}  # name: the units column


def entities(chars, tags):
    """The names of one tagged sentence: each B- run (with its I- tags) as one string."""
    names = []
    for char, tag in zip(chars, tags):
        if tag.startswith("B-") or (tag.startswith("I-") and not names):
            names.append(char)
        elif tag.startswith("I-"):
            names[-1] += char
    return names


def documents(sentences):
    """Documents of `DOCUMENT_SENTENCES` consecutive sentences: `text` (a sentence per line) and `entities`."""
    groups = range(0, len(sentences), DOCUMENT_SENTENCES)
    chunks = [sentences.iloc[start:start + DOCUMENT_SENTENCES] for start in groups]
    return pd.DataFrame({
        "text": ["\n".join("".join(chars) for chars in chunk["tokens"]) for chunk in chunks],
        "entities": [sorted({name for row in chunk.itertuples() for name in entities(row.tokens, row.tags)})
                     for chunk in chunks]})


def pretrained_backbone(corpus, units_column, phases, name):
    """The backbone after one epoch of masked LM on `corpus`, knowledge units from `units_column` (or none)."""
    keras.utils.set_random_seed(0)
    pretrainer = kb.BertPretrainer.from_preset(PRESET, next_sentence=None, max_sequence_length=128,
                                               masking=kb.data.MaskingConfig(strategy="whole_word"),
                                               columns={"units": units_column})
    history = pretrainer.fit(corpus, epochs=1, batch_size=32, learning_rate=1e-4, seed=0, verbose=2)
    phases.mark(f"pre-training, {name} ({int(pretrainer.optimizer.iterations)} steps, "
                f"loss {history.history['loss'][-1]:.3f})")
    return pretrainer.backbone


def ner_f1(backbone, train, test, tags, phases, name, epochs, learning_rate):
    """Entity F1 on `test` of a token classifier on `backbone` (None: the original checkpoint) fitted on `train`
    (`learning_rate` None: the task's default)."""
    keras.utils.set_random_seed(0)
    if backbone is None:
        tagger = kb.BertTokenClassifier.from_preset(PRESET, labels=tags, sequence_length=128)
    else:
        preprocessor = kb.BertPreprocessor.from_preset(PRESET, sequence_length=128)
        tagger = kb.BertTokenClassifier(backbone, preprocessor, labels=tags)
    tagger.fit(train, epochs=epochs, batch_size=32, learning_rate=learning_rate, seed=0, verbose=2)
    results = tagger.evaluate(test, verbose=0)
    phases.mark(f"NER, {name}")
    return results


def main(arguments):
    phases = Phases()
    folder = SHARED_DATA / "msra_ner"
    train_file = kb.data.load_conll(folder / "msra_train_bio.txt.gz")
    test = kb.data.load_conll(folder / "msra_test_bio.txt")
    test = test if arguments.test_sentences is None else test.head(arguments.test_sentences)
    ner_train = train_file.head(arguments.ner_sentences)
    corpus = documents(train_file.iloc[arguments.ner_sentences:arguments.ner_sentences + arguments.pretrain_sentences])
    tags = sorted({tag for row in train_file["tags"] for tag in row})
    units = sum(len(names) for names in corpus["entities"])
    phases.mark("data")

    tuning = (arguments.ner_epochs, arguments.ner_learning_rate)
    rows = [("no further pre-training", ner_f1(None, ner_train, test, tags, phases, "original", *tuning))]
    for name, units_column in MASKING.items():
        backbone = pretrained_backbone(corpus, units_column, phases, name)
        rows.append((name, ner_f1(backbone, ner_train, test, tags, phases, name, *tuning)))

    print(f"\nMSRA NER: pre-trained on {arguments.pretrain_sentences:,} training sentences ({len(corpus)} documents, "
          f"{units:,} names, each counted once per document), fine-tuned on {len(ner_train):,} ({arguments.ner_epochs} "
          f"epochs, rate {arguments.ner_learning_rate or 'default'}), tested on {len(test):,}")
    print(pd.DataFrame([(name, r["f1"], r["precision"], r["recall"], *(r["per_type_f1"].get(kind, 0.0)
                                                                       for kind in ("PER", "LOC", "ORG")))
                        for name, r in rows],
                       columns=["backbone", "entity F1", "precision", "recall", "PER", "LOC", "ORG"])
          .to_string(index=False, float_format=lambda value: f"{value:.4f}"))
    print(phases)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pretrain-sentences", type=int, default=12000)
    parser.add_argument("--ner-sentences", type=int, default=3000)
    parser.add_argument("--ner-epochs", type=int, default=2)
    parser.add_argument("--ner-learning-rate", type=float, default=None, help="the tagger's fine-tuning rate "
                        "(default: the task's, 5e-5 for this size)")
    parser.add_argument("--test-sentences", type=int, default=None, help="the first N test sentences (all: None)")
    main(parser.parse_args())
