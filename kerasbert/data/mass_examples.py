"""MASS (Song et al. 2019, "Masked Sequence to Sequence Pre-training"): pre-training pairs for `BertSeq2Seq` from
plain text.

Each text loses one contiguous fragment of its words (half of them by default, as the paper's k = 50%): the source
is the text with every fragment word replaced by the mask token, the target is the fragment. `BertSeq2Seq` reads
the source bidirectionally and writes the target left to right, as MASS's decoder; fine-tuning on a generation
task then starts from an encoder and a decoder trained together. Fragments are whole words (a word is never cut
into pieces the target must finish), drawn per text from `seed`.

Examples:
    >>> mass_examples(["It is a truth universally acknowledged."], seed=0)
    ... # source "It is a [MASK] [MASK] [MASK]", target "truth universally acknowledged."
    >>> seq2seq.fit(mass_examples(sentences), epochs=1)       # then fine-tune seq2seq on the task
"""

import numpy as np
import pandas as pd

from kerasbert.arguments import check_number
from kerasbert.data.validation import to_dataframe, validate_text_columns

MASS_FRAGMENT = 0.5  # the paper's k: half of each sentence


def mass_examples(texts, fragment=MASS_FRAGMENT, seed=0, mask_token="[MASK]", text_column="text"):
    """MASS pairs of `texts` (a list or Series of strings, or a DataFrame with `text_column`): a DataFrame with
    `source` (the text, its fragment masked word by word) and `target` (the fragment), one row per text, in
    order, on the texts' index.

    Args:
        fragment: the share of each text's words masked as one run (at least one word).
        seed: draws where each fragment starts; the same seed gives the same pairs.
        mask_token: the tokenizer's mask token (`seq2seq.tokenizer.mask_token` for other vocabularies).
    """
    check_number("fragment", fragment, 0, 1, low_open=True, hint=" MASS masks half of each sentence (0.5).")
    frame = to_dataframe(texts, text_column=text_column)
    validate_text_columns(frame, {"text_column": text_column})
    rng = np.random.default_rng(seed)
    sources, targets = [], []
    for text in frame[text_column]:
        words = text.split()
        length = max(1, round(fragment * len(words)))
        start = int(rng.integers(0, len(words) - length + 1))
        sources.append(" ".join(words[:start] + [mask_token] * length + words[start + length:]))
        targets.append(" ".join(words[start:start + length]))
    return pd.DataFrame({"source": sources, "target": targets}, index=frame.index)
