"""Main job (for now): encode sentences with the real all-MiniLM-L6-v2 and print their similarities.

Run: `make main` (or `.venv/bin/python applications/sentence_similarity.py`).
Sentence embeddings are the mean of the token states over real tokens, L2-normalised,
exactly as sentence-transformers pools all-MiniLM-L6-v2.
"""

from recipe_tools import Phases  # first: it quiets TensorFlow's log

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


def embed(backbone, preprocessor, sentences):
    """Mean-pooled, L2-normalised sentence embeddings."""
    inputs = preprocessor(sentences)
    states = np.asarray(backbone(inputs)["sequence_output"])
    mask = np.asarray(inputs["padding_mask"], dtype="float32")[:, :, None]
    pooled = (states * mask).sum(1) / mask.sum(1)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def main():
    phases = Phases()
    backbone = kb.BertBackbone.from_preset("all_minilm_l6_v2_en")
    preprocessor = kb.tokenizers.BertPreprocessor.from_preset(
        "all_minilm_l6_v2_en", sequence_length=128, pad_to_sequence_length=False
    )
    embeddings = embed(backbone, preprocessor, SENTENCES)
    similarities = embeddings @ embeddings.T
    print(f"all_minilm_l6_v2_en: {backbone.count_params():,} parameters, "
          f"{len(SENTENCES)} sentences loaded and encoded, {phases}\n")
    for i, sentence in enumerate(SENTENCES):
        j = max((k for k in range(len(SENTENCES)) if k != i), key=lambda k: similarities[i, k])
        print(f"{sentence}\n    closest ({similarities[i, j]:.3f}): {SENTENCES[j]}")
    print("\ncosine similarity matrix:")
    print(np.array2string(similarities, precision=3, suppress_small=True))


if __name__ == "__main__":
    main()
