"""Documents longer than the window: whole Jane Austen chapters (which of the six novels?) and SpamAssassin
emails (spam or ham), read cut at 128 or at 512 tokens, or whole in overlapping windows of 128 tokens whose
logits are pooled per document (mean or max).

Run: `.venv/bin/python applications/long_documents.py` (736 s on 2 CPU cores with the defaults, 2026-11-25;
`--help` lists the sizes). Then: Austen accuracy 0.875 cut at 128, 0.958 cut at 512, 1.000 in windows with mean
pooling, 0.854 with max pooling (48 test chapters, 8 per novel); SpamAssassin 0.938 / 0.931 / 0.906 / 0.906 (160
test emails): a novel is told by names anywhere in a chapter, spam by an email's first lines.

XLNet rows (`--readings xlnet`, or `all`): no pre-trained XLNet can be downloaded here, so both rows are a
randomly initialised small XLNet (4 layers, hidden 128, 4 heads; a SentencePiece model trained on the training
documents with XLNet's settings) trained the same way (AdamW `--xlnet-learning-rate`, one document a step):
"XLNet, cut at 128" reads a document's first 126 pieces; "XLNet, memory" reads it whole, segment after segment
of 128 tokens, each attending to the last 384 hidden states of every layer that the previous segments left
(`kb.MemoryReader`; the loss on the last segment's `<cls>`, no gradient through the memory, as Transformer-XL).
Measured 2026-11-28 (1,037 s, shared CPU): Austen 0.167 either way (chance: from random weights neither learns the
novels), SpamAssassin 0.894 cut at 128 against 0.838 through the memory.

Long-family rows (`--readings long`, or `all`): no pre-trained Longformer, BigBird or ModernBERT can be
downloaded here, so each is a randomly initialised small model of the family (4 layers, hidden 128, 4 heads) with its family's tokenizer
trained on the training documents (a byte-level BPE for Longformer and ModernBERT, a BigBird SentencePiece model
for BigBird; 4,000 pieces each), reading a document's first 4,094 pieces at once (Longformer: windows of 512 with
`<s>` global; BigBird: blocks of 64 with 3 random blocks; ModernBERT: a global layer then local ones with windows of
128), next to the same BigBird cut at 128 (where it attends fully), all trained alike (AdamW
`--long-learning-rate`, one document a step). Measured 2026-11-28 (2,225 s, the CPU otherwise idle): Austen 0.167
for BigBird at 128 and 4,096 and for Longformer (chance: the post-LN families learned nothing from random weights
at this rate), 0.542 for ModernBERT (pre-norm); SpamAssassin 0.500 / 0.519 / 0.500 and 0.950 for ModernBERT.

Data (shipped, offline): `jane_austen` has one row per paragraph with its `book` and `chapter`; a document is a
chapter's paragraphs joined (chapter 0, the front matter, left out), labelled by its book. Chapters are drawn
per novel with a fixed seed, so every novel is in train and test and no chapter is in both. `spam_assassin`:
1,000 emails, labelled spam or ham, with its own train and test split; a balanced sample of each is drawn.
Every reading trains the same model the same way (all_minilm_l6_v2_en, AdamW with warmup and decay, the same
documents, batches of documents, steps and seed); only how a document is read differs. Windows share
`doc_stride` = 32 of their 126 text pieces (HF's `stride`); the loss is on each document's pooled logits.
"""

import argparse
import io
import tempfile
import time
import warnings

from recipe_tools import Phases  # first: it quiets TensorFlow's log

import keras
import numpy as np
import pandas as pd
import sentencepiece

import kerasbert as kb

PRESET = "all_minilm_l6_v2_en"
SEED = 0
READINGS = {  # name: from_preset arguments
    "cut at 128": {"sequence_length": 128},
    "cut at 512": {"sequence_length": 512},
    "windows 128, mean": {"sequence_length": 128, "long_inputs": kb.LongInputs(doc_stride=32, window_pooling="mean")},
    "windows 128, max": {"sequence_length": 128, "long_inputs": kb.LongInputs(doc_stride=32, window_pooling="max")},
}


LONG_SIZE = {"num_layers": 4, "num_heads": 4, "hidden_dim": 128, "intermediate_dim": 512}  # random init
LONG_LENGTH = 4096
XLNET_SIZE = {"num_layers": 4, "num_heads": 4, "hidden_dim": 128, "intermediate_dim": 512}  # random init
XLNET_SEGMENT, XLNET_MEMORY = 128, 384  # tokens per segment; hidden states kept per layer


def xlnet_spiece(texts, vocabulary_size=4000):
    """The bytes of a unigram `spiece.model` trained on `texts` with XLNet's settings (google-research/xlnet)."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=model, model_type="unigram", vocab_size=vocabulary_size,
        hard_vocab_limit=False, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        control_symbols=["<cls>", "<sep>", "<pad>", "<mask>", "<eod>"],
        user_defined_symbols=["<eop>", ".", "(", ")", '"', "-", "–", "£", "€"], character_coverage=0.99995,
        max_sentence_length=1 << 16, num_threads=2, minloglevel=2)
    return model.getvalue()


def xlnet_classifier(spiece, labels, memory_length):
    """A `BertClassifier` on a randomly initialised small XLNet (seeded by the caller). The tokenizer is made
    after the seed is set: `keras.utils.set_random_seed` clears TensorFlow's caches, the SentencePiece op's
    resource with them."""
    tokenizer = kb.XLNetTokenizer(spiece)
    backbone = kb.XLNetBackbone(vocabulary_size=tokenizer.vocabulary_size(), memory_length=memory_length,
                                **XLNET_SIZE)
    preprocessor = kb.BertPreprocessor(tokenizer, sequence_length=XLNET_SEGMENT, pad_to_sequence_length=False)
    return kb.BertClassifier(backbone, preprocessor, labels=labels)


def xlnet_rows(train, test, epochs, learning_rate):
    """The two XLNet readings, cut at 128 and through the memory, as rows of the table."""
    spiece, labels, rows = xlnet_spiece(train["text"].tolist()), sorted(train["label"].unique()), []
    for reading in ("XLNet, cut at 128", f"XLNet, memory {XLNET_MEMORY}, segments of {XLNET_SEGMENT}"):
        keras.utils.set_random_seed(SEED)
        memory = reading != "XLNet, cut at 128"
        classifier = xlnet_classifier(spiece, labels, XLNET_MEMORY if memory else None)
        start = time.perf_counter()
        if memory:
            reader = kb.MemoryReader(classifier, segment_length=XLNET_SEGMENT)
            reader.fit_documents(train, epochs=epochs, learning_rate=learning_rate, seed=SEED)
            trained = time.perf_counter()
            predicted = reader.predict_documents(test["text"]).argmax(-1)
            gold = classifier.label_encoder.encode(test["label"])
            results = {"accuracy": float(np.mean(predicted == gold)),
                       "macro_f1": kb.metrics.statistics.macro_f1(gold, predicted, len(labels))}
        else:
            classifier.fit(train, epochs=epochs, batch_size=1, learning_rate=learning_rate, seed=SEED, verbose=0)
            trained = time.perf_counter()
            results = classifier.evaluate(test, batch_size=32, verbose=0)
        rows.append(table_row(reading, start, trained, time.perf_counter(), results))
        print("  " + ", ".join(f"{key} {value}" for key, value in rows[-1].items()), flush=True)
    return rows


def big_bird_spiece(texts, vocabulary_size=4000):
    """The bytes of a unigram `spiece.model` trained on `texts` with BigBird's special pieces."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=model, model_type="unigram", vocab_size=vocabulary_size,
        hard_vocab_limit=False, pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="</s>",
        bos_piece="<s>", unk_piece="<unk>", user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"],
        character_coverage=0.99995, max_sentence_length=1 << 16, num_threads=2, minloglevel=2)
    return model.getvalue()


def byte_level_bpe(texts, folder, vocabulary_size=4000):
    """`(vocab.json, merges.txt)` paths of a byte-level BPE trained on `texts` with RoBERTa's special tokens."""
    import tokenizers  # HF tokenizers (the `test` extra): it trains the BPE, kerasbert reads its files

    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=vocabulary_size, min_frequency=2, show_progress=False,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(folder)
    return f"{folder}/vocab.json", f"{folder}/merges.txt"


def long_backbone(family, vocabulary_size, length):
    """A randomly initialised small backbone of `family` (seeded by the caller) for inputs of `length` tokens."""
    if family == "Longformer":
        return kb.LongformerBackbone(vocabulary_size=vocabulary_size, max_sequence_length=length + 2,
                                     attention_window=512, global_tokens="cls", **LONG_SIZE)
    if family == "BigBird":
        return kb.BigBirdBackbone(vocabulary_size=vocabulary_size, max_sequence_length=length, block_size=64,
                                  num_random_blocks=3, **LONG_SIZE)
    return kb.ModernBertBackbone(vocabulary_size=vocabulary_size, max_sequence_length=length, local_attention=128,
                                 global_attn_every_n_layers=3, **LONG_SIZE)


def long_rows(train, test, epochs, learning_rate):
    """The long families at 4,096 tokens and BigBird cut at 128, as rows of the table."""
    texts, labels, rows = train["text"].tolist(), sorted(train["label"].unique()), []
    spiece = big_bird_spiece(texts)
    with tempfile.TemporaryDirectory() as folder:
        bpe = byte_level_bpe(texts, folder)
        for family, length in (("BigBird", 128), ("Longformer", LONG_LENGTH), ("BigBird", LONG_LENGTH),
                               ("ModernBERT", LONG_LENGTH)):
            keras.utils.set_random_seed(SEED)  # then the tokenizer: the seed clears TensorFlow's SentencePiece op
            tokenizer = kb.BigBirdTokenizer(spiece) if family == "BigBird" else kb.RobertaTokenizer(*bpe)
            rows.append(long_row(family, tokenizer, length, labels, train, test, epochs, learning_rate))
            print("  " + ", ".join(f"{key} {value}" for key, value in rows[-1].items()), flush=True)
    return rows


def long_row(family, tokenizer, length, labels, train, test, epochs, learning_rate):
    """One long-family reading trained and tested, as a row of the table."""
    backbone = long_backbone(family, tokenizer.vocabulary_size(), length)
    preprocessor = kb.BertPreprocessor(tokenizer, sequence_length=length, pad_to_sequence_length=False)
    classifier = kb.BertClassifier(backbone, preprocessor, labels=labels)
    start = time.perf_counter()
    classifier.fit(train, epochs=epochs, batch_size=1, learning_rate=learning_rate, seed=SEED, verbose=0)
    trained = time.perf_counter()
    results = classifier.evaluate(test, batch_size=4, verbose=0)
    return table_row(f"{family} (random init), cut at {length:,}", start, trained, time.perf_counter(), results)


def table_row(reading, start, trained, tested, results):
    return {"reading": reading, "train s": round(trained - start), "test s": round(tested - trained),
            "accuracy": round(results["accuracy"], 3), "macro F1": round(results["macro_f1"], 3),
            "test documents cut": results.get("truncated_rows", 0),
            "pieces cut (mean)": round(results.get("mean_cut_pieces", 0.0))}


def austen_chapters(train_per_novel, test_per_novel, seed=SEED):
    """Train and test DataFrames (`text`, `label`): whole chapters drawn per novel, labelled by the novel."""
    rows = pd.concat(kb.data.load_dataset("jane_austen").values())
    rows = rows[~rows.is_heading & (rows.chapter > 0)]
    chapters = rows.groupby(["book", "chapter"], sort=False).text.apply(" ".join).reset_index()
    rng = np.random.default_rng(seed)
    train, test = [], []
    for _, novel in chapters.groupby("book", sort=False):
        drawn = novel.iloc[rng.permutation(len(novel))]
        train.append(drawn.iloc[:train_per_novel])
        test.append(drawn.iloc[train_per_novel:train_per_novel + test_per_novel])
    return tuple(pd.concat(part).rename(columns={"book": "label"})[["text", "label"]].reset_index(drop=True)
                 for part in (train, test))


def spam_emails(train_count, test_count, seed=SEED):
    """Balanced samples of the shipped SpamAssassin train and test splits (`text`, `label`)."""
    splits = kb.data.load_dataset("spam_assassin")

    def sample(frame, count):
        return (frame.groupby("label", group_keys=False).sample(n=count // 2, random_state=seed)
                .sample(frac=1.0, random_state=seed)[["text", "label"]].reset_index(drop=True))

    return sample(splits["train"], train_count), sample(splits["test"], test_count)


def compare(name, train, test, args):
    """Train and test one classifier per reading (`args.readings`: MiniLM's, XLNet's, the long families' or all);
    print a Markdown table and return its rows."""
    print(f"\n{name}: {len(train)} train / {len(test)} test documents")
    rows = []
    for reading, arguments in (READINGS if args.readings in ("minilm", "all") else {}).items():
        keras.utils.set_random_seed(SEED)
        classifier = kb.BertClassifier.from_preset(PRESET, labels=sorted(train["label"].unique()), **arguments)
        if not rows:
            pieces = classifier.tokenizer.tokenize(test["text"].tolist()).row_lengths().numpy()
            print(f"  MiniLM pieces per test document: {np.median(pieces):,.0f} (median; mean {pieces.mean():,.0f}, "
                  f"longest {pieces.max():,}), {np.mean(pieces > 126):.0%} longer than 126, "
                  f"{np.mean(pieces > 510):.0%} longer than 510")
        start = time.perf_counter()
        classifier.fit(train, epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.learning_rate,
                       seed=SEED, verbose=0)
        trained = time.perf_counter()
        results = classifier.evaluate(test, batch_size=32, verbose=0)
        rows.append(table_row(reading, start, trained, time.perf_counter(), results))
        print("  " + ", ".join(f"{key} {value}" for key, value in rows[-1].items()), flush=True)
    if args.readings in ("xlnet", "all"):
        rows += xlnet_rows(train, test, args.epochs, args.xlnet_learning_rate)
    if args.readings in ("long", "all"):
        rows += long_rows(train, test, args.epochs, args.long_learning_rate)
    print(markdown(rows))
    return rows


def markdown(rows):
    """A list of dicts with the same keys as a Markdown table."""
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    return "\n".join(lines + ["| " + " | ".join(str(value) for value in row.values()) + " |" for row in rows])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-chapters-per-novel", type=int, default=8)
    parser.add_argument("--test-chapters-per-novel", type=int, default=8)
    parser.add_argument("--train-emails", type=int, default=80)
    parser.add_argument("--test-emails", type=int, default=160)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1, help="documents per batch (all windows of each)")
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--readings", choices=("minilm", "xlnet", "long", "all"), default="minilm",
                        help="MiniLM's four readings (the default), the two XLNet rows, the long families, or all")
    parser.add_argument("--xlnet-learning-rate", type=float, default=5e-4, help="AdamW's for the random-init XLNet")
    parser.add_argument("--long-learning-rate", type=float, default=5e-4,
                        help="AdamW's for the random-init long families")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".* were cut")  # the table counts what truncation cuts
    phases = Phases()
    if args.readings in ("minilm", "all"):
        print(f"{PRESET}, {args.epochs} epochs, batches of {args.batch_size} documents, AdamW {args.learning_rate}, "
              "windows of 128 tokens sharing 32 pieces")
    if args.readings in ("long", "all"):
        print(f"Long families (random init, {LONG_SIZE}), {args.epochs} epochs, one document a step, AdamW "
              f"{args.long_learning_rate}, {LONG_LENGTH:,} tokens")
    if args.readings in ("xlnet", "all"):
        print(f"XLNet (random init, {XLNET_SIZE}), {args.epochs} epochs, one document a step, AdamW "
              f"{args.xlnet_learning_rate}, segments of {XLNET_SEGMENT}, memory {XLNET_MEMORY}")
    compare("Austen chapters -> novel (6 classes)",
            *austen_chapters(args.train_chapters_per_novel, args.test_chapters_per_novel), args)
    phases.mark("Austen")
    compare("SpamAssassin emails -> spam or ham", *spam_emails(args.train_emails, args.test_emails), args)
    phases.mark("SpamAssassin")
    print(phases)


if __name__ == "__main__":
    main()
