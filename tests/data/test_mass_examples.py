"""MASS pre-training pairs (issue 37): one contiguous fragment of each real sentence masked in the source and
written as the target; a BertSeq2Seq learns to write the fragments back.

Reference: MASS (Song et al. 2019), section 2.2: a fragment of k = 50% of the sentence, masked in the encoder
input, predicted by the decoder.
"""

import keras
import pandas as pd
import pytest

import kerasbert as kb
from kerasbert.data.mass_examples import mass_examples
from kerasbert.data.shipped import load_dataset


@pytest.fixture(scope="module")
def sentences():
    """300 real sentences of Persuasion (the shipped Austen test split), 3 to 40 words."""
    texts = load_dataset("jane_austen", "test")["text"]
    return texts[texts.str.split().str.len().between(3, 40)].head(300)


def fragment_of(source, target):
    """(start, length) of the run of [MASK] words in `source`, after checking that it is one run and that
    putting `target` back gives the sentence."""
    words = source.split()
    masked = [i for i, word in enumerate(words) if word == "[MASK]"]
    assert masked == list(range(masked[0], masked[-1] + 1))  # contiguous
    assert len(target.split()) == len(masked)
    return masked[0], len(masked)


def test_half_of_each_sentence_is_one_run_and_the_target_restores_it(sentences):
    pairs = mass_examples(sentences, seed=0)
    assert pairs.index.equals(sentences.index) and list(pairs.columns) == ["source", "target"]
    starts = []
    for text, source, target in zip(sentences, pairs["source"], pairs["target"]):
        start, length = fragment_of(source, target)
        words = text.split()
        assert length == max(1, round(0.5 * len(words)))
        assert " ".join(words[:start] + target.split() + words[start + length:]) == " ".join(words)
        starts.append(start)
    assert len(set(starts)) > 5  # fragments start anywhere, not always at the first word

    again, other = mass_examples(sentences, seed=0), mass_examples(sentences, seed=1)
    pd.testing.assert_frame_equal(again, pairs)
    assert (other["source"] != pairs["source"]).mean() > 0.5


def test_fragment_size_and_one_word_texts():
    pairs = mass_examples(["Anne", "She was ten years older than her sister."], fragment=0.25, mask_token="<mask>")
    assert pairs["source"][0] == "<mask>" and pairs["target"][0] == "Anne"
    assert pairs["source"][1].split().count("<mask>") == 2


def test_bad_input_is_named_before_any_work():
    with pytest.raises(ValueError, match="not usable text"):
        mass_examples(["A real sentence.", float("nan")])
    with pytest.raises(ValueError, match="not usable text"):
        mass_examples(["A real sentence.", "   "])
    with pytest.raises(ValueError, match="fragment"):
        mass_examples(["A real sentence."], fragment=0)
    with pytest.raises(ValueError, match="'words'"):
        mass_examples(pd.DataFrame({"sentence": ["A real sentence."]}), text_column="words")


def test_seq2seq_learns_to_write_the_masked_fragments(sentences):
    preprocessor = kb.BertPreprocessor.from_preset("all_minilm_l6_v2_en", sequence_length=39,
                                                   pad_to_sequence_length=False)
    keras.utils.set_random_seed(0)
    backbone = kb.BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=32, intermediate_dim=64,
                               max_sequence_length=64, dropout=0.0, attention_dropout=0.0)
    model = kb.BertSeq2Seq(backbone, preprocessor, max_source_length=20, max_target_length=16)
    short = sentences[sentences.str.split().str.len().between(4, 8)].head(4)
    pairs = mass_examples(short, seed=0)
    history = model.fit(pairs, epochs=100, batch_size=4, learning_rate=1e-2, verbose=0).history["loss"]
    written = model.generate(pairs["source"].tolist(), max_length=16)
    print(f"MASS loss {history[0]:.2f} -> {history[-1]:.3f}; {list(zip(pairs['source'], written))}")
    expected = [text.decode() for text in model.tokenizer.detokenize(model.tokenizer(pairs["target"].tolist()))
                .numpy().tolist()]  # as generation writes them: lower case, HF spacing
    assert written == expected
