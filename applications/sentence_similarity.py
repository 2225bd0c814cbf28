"""Sentence embeddings with the real all-MiniLM-L6-v2 (`BertTextEncoder`): nearest neighbours of a few
sentences, then STS-B dev scored with no training at all (cosine similarity against the gold 0-5 score), then
after one epoch of CoSENT fine-tuning on STS-B train (5,749 scored pairs, batch 16, the default AdamW rate).

Run: `.venv/bin/python applications/sentence_similarity.py`. The encoder pools as the checkpoint's
sentence-transformers files say (mean over real tokens, L2-normalised, at most 256 word pieces). STS-B dev is
read from `../shared/data/glue/STS-B` (or `$KERASBERT_SHARED_DATA/glue`); skipped with a note when absent.
"""

from recipe_tools import SHARED_DATA, Phases  # first: it quiets TensorFlow's log

import numpy as np

import kerasbert as kb

SENTENCES = [
    "A man is playing a guitar.",
    "Someone is strumming a guitar on stage.",
    "The new movie is awesome.",
    "This film was a complete waste of time.",
    "It is a truth universally acknowledged, that a single man must be in want of a wife.",
    "A rich bachelor is surely looking for someone to marry.",
]


def main():
    phases = Phases()
    encoder = kb.BertTextEncoder.from_preset("all_minilm_l6_v2_en")
    similarities = encoder.similarity(SENTENCES, SENTENCES)
    print(f"all_minilm_l6_v2_en: {encoder.count_params():,} parameters, {len(SENTENCES)} sentences, {phases}\n")
    for i, sentence in enumerate(SENTENCES):
        j = max((k for k in range(len(SENTENCES)) if k != i), key=lambda k: similarities[i, k])
        print(f"{sentence}\n    closest ({similarities[i, j]:.3f}): {SENTENCES[j]}")
    print("\ncosine similarity matrix:")
    print(np.array2string(similarities, precision=3, suppress_small=True))

    path = SHARED_DATA / "glue" / "STS-B" / "dev.tsv"
    if not path.is_file():
        print(f"\n{path} is absent: STS-B not scored.")
        return
    dev = kb.data.load_glue_tsv(path, "STS-B")
    first, second = (encoder.encode(dev[column].tolist(), verbose=0) for column in ("text", "text_pair"))
    cosine = (first * second).sum(axis=1)
    phases.mark("STS-B")
    pearson, spearman = kb.metrics.pearson(dev["label"], cosine), kb.metrics.spearman(dev["label"], cosine)
    print(f"\nSTS-B dev ({len(dev):,} pairs), no training: cosine Pearson {pearson:.4f}, Spearman {spearman:.4f} "
          f"({phases})")
    train = kb.data.load_glue_tsv(path.with_name("train.tsv"), "STS-B")
    scored = {split: frame.rename(columns={"label": "score"})[["text", "text_pair", "score"]]
              for split, frame in (("train", train), ("dev", dev))}
    encoder.fit(scored["train"], epochs=1, batch_size=16, loss="cosent", verbose=2)
    phases.mark("CoSENT fine-tuning")
    tuned = encoder.evaluate(scored["dev"], verbose=0)
    print(f"STS-B dev after CoSENT on train ({len(train):,} pairs, 1 epoch): cosine Pearson {tuned['pearson']:.4f}, "
          f"Spearman {tuned['spearman']:.4f} ({phases})")


if __name__ == "__main__":
    main()
