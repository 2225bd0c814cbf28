"""BertSeq2Seq (UniLM-style generation): the seq2seq attention mask, the target masking, training on real
sentences, greedy and beam decoding with and without the key/value cache, `.keras` files, bad input.

Reference: UniLM (Dong et al. 2019), section 2.3 (the seq2seq self-attention mask and fine-tuning by
masking target tokens, 0.7 of them, the final [SEP] included) and microsoft/unilm `Preprocess4Seq2seq`.
"""

import json
import textwrap

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import kerasbert as kb
from kerasbert.data.seq2seq_masking import TargetMasker
from kerasbert.data.shipped import load_dataset
from kerasbert.generation.seq2seq_decoding import beam_search, greedy_search
from kerasbert.tasks.bert_seq2seq import seq2seq_attention_mask

# Four pairs of real sentences (Persuasion): the model must learn to write each target from its source.
PAIRS = [("Mr Shepherd was all gratitude.", "The girls looked all amazement."),
         ("He got up and moved away.", "But not a bit did Walter stir."),
         ("It was spoken with enthusiasm.", '"When did that happen?"'),
         ("Here Anne spoke--", "This brought his sister upon him.")]


def tiny_seq2seq(preprocessor, num_layers=1, hidden_dim=32, **backbone_options):
    keras.utils.set_random_seed(0)
    backbone = kb.BertBackbone(vocabulary_size=30522, num_layers=num_layers, num_heads=2, hidden_dim=hidden_dim,
                               intermediate_dim=2 * hidden_dim, max_sequence_length=64, dropout=0.0,
                               attention_dropout=0.0, **backbone_options)
    return kb.BertSeq2Seq(backbone, preprocessor, max_source_length=20, max_target_length=16)


def written_as_generated(model, texts):
    """The texts as generation writes them: tokenised, then detokenised (lower case, HF spacing)."""
    return [text.decode() for text in model.tokenizer.detokenize(model.tokenizer(texts)).numpy().tolist()]


@pytest.fixture(scope="module")
def preprocessor():
    return kb.BertPreprocessor.from_preset("all_minilm_l6_v2_en", sequence_length=39, pad_to_sequence_length=False)


@pytest.fixture(scope="module")
def pairs():
    austen = set(load_dataset("jane_austen", "test")["text"])
    assert all(text in austen for pair in PAIRS for text in pair)
    return pd.DataFrame(PAIRS, columns=["source", "target"])


def test_attention_mask_is_unilms_seq2seq_mask():
    # [CLS] s1 [SEP] | t1 t2 [SEP] | [PAD]
    segment_ids = np.array([[0, 0, 0, 1, 1, 1, 0]])
    padding_mask = np.array([[1, 1, 1, 1, 1, 1, 0]])
    source_rows = [1, 1, 1, 0, 0, 0, 0]  # the source sees the source only
    expected = np.array([source_rows, source_rows, source_rows,
                         [1, 1, 1, 1, 0, 0, 0],  # t1: the source and itself
                         [1, 1, 1, 1, 1, 0, 0],  # t2: and t1
                         [1, 1, 1, 1, 1, 1, 0],  # [SEP]: the whole target
                         [1, 1, 1, 1, 1, 1, 0]], bool)  # padding (unused) as the [SEP]; no one sees padding
    mask = keras.ops.convert_to_numpy(seq2seq_attention_mask(segment_ids, padding_mask))
    np.testing.assert_array_equal(mask[0], expected)


def test_each_position_sees_only_what_the_mask_allows(preprocessor):
    model = tiny_seq2seq(preprocessor, num_layers=2)
    rng = np.random.default_rng(0)
    token_ids = rng.integers(1000, 30000, size=(1, 10)).astype("int32")
    segment_ids = np.array([[0, 0, 0, 0, 1, 1, 1, 1, 1, 0]], "int32")
    padding_mask = np.array([[1, 1, 1, 1, 1, 1, 1, 1, 1, 0]], "int32")

    def logits(ids):
        inputs = {"token_ids": ids, "segment_ids": segment_ids, "padding_mask": padding_mask,
                  "mask_positions": np.arange(10, dtype="int32")[None]}
        return keras.ops.convert_to_numpy(model(inputs, training=False))[0]

    before = logits(token_ids)
    for changed, unaffected in [(6, range(6)), (9, range(9)), (2, [])]:  # a target token, padding, a source token
        ids = token_ids.copy()
        ids[0, changed] += 1
        after = logits(ids)
        differs = [position for position in range(9) if not np.allclose(after[position], before[position], atol=1e-5)]
        assert differs == [p for p in range(9) if p not in unaffected], changed


def test_target_masker_chooses_the_target_and_its_final_sep_only():
    masker = TargetMasker(mask_token_id=103, drawable_token_ids=range(1000, 1010), max_predictions=8, seed=0)
    batch = {"token_ids": tf.constant([[101, 7, 8, 102, 20, 21, 22, 23, 102, 0]] * 200),
             "segment_ids": tf.constant([[0, 0, 0, 0, 1, 1, 1, 1, 1, 0]] * 200),
             "padding_mask": tf.constant([[1, 1, 1, 1, 1, 1, 1, 1, 1, 0]] * 200)}
    inputs, mask_ids, mask_weights = (keras.tree.map_structure(np.asarray, part) for part in masker(batch))
    assert (mask_weights.sum(axis=1) == 4).all()  # round(5 * 0.7) of the four tokens and the [SEP]
    chosen = inputs["mask_positions"][:, :4]
    assert set(chosen.ravel()) == {4, 5, 6, 7, 8}  # the [SEP] at 8 too, never the source
    np.testing.assert_array_equal(mask_ids[:, :4], np.asarray(batch["token_ids"])[0][chosen])
    replaced = np.take_along_axis(inputs["token_ids"], chosen, axis=1)
    assert 0.75 < (replaced == 103).mean() < 0.85 and 0.05 < ((replaced >= 1000) & (replaced < 1010)).mean() < 0.15
    unchosen = np.ones(inputs["token_ids"].shape, bool)
    np.put_along_axis(unchosen, chosen, False, axis=1)
    np.testing.assert_array_equal(inputs["token_ids"][unchosen], np.asarray(batch["token_ids"])[unchosen])


@pytest.fixture(scope="module")
def memorised(preprocessor, pairs):
    model = tiny_seq2seq(preprocessor, hidden_dim=128)
    history = model.fit(pairs, epochs=60, batch_size=4, learning_rate=1e-2, verbose=0)
    return model, history.history["loss"]


@pytest.mark.all_backends
def test_fit_learns_to_write_real_sentences_and_every_decoding_agrees(memorised, pairs):
    model, losses = memorised
    assert losses[0] > 9.0 and losses[-1] < 0.2  # from ln(30522) = 10.3 to near zero
    sources, targets = pairs["source"].tolist(), written_as_generated(model, pairs["target"].tolist())
    greedy = model.generate(sources)
    assert greedy == targets
    assert model.generate(sources, use_cache=False) == greedy
    assert model.generate(sources, beam_size=1) == greedy
    assert model.generate(sources, beam_size=3) == targets
    assert model.generate(sources[0]) == targets[0]
    predicted = model.predict(pairs, verbose=0)
    assert predicted["generated"].tolist() == targets and (predicted["score"] < 0).all()
    assert model.evaluate(pairs)["accuracy"] > 0.9


def test_cached_decoding_equals_recomputing_token_for_token(preprocessor, real_sentences):
    # An untrained model writes up to max_length tokens from sources of many lengths: long, varied decodings.
    model = tiny_seq2seq(preprocessor, num_layers=2)
    sources = real_sentences[:6]
    for beam_size in (1, 3):
        cached = model.predict(sources, beam_size=beam_size, max_length=10)
        recomputed = model.predict(sources, beam_size=beam_size, max_length=10, use_cache=False)
        assert cached["generated"].tolist() == recomputed["generated"].tolist()
        assert all(len(model.tokenizer(text)) >= 3 for text in cached["generated"])
        np.testing.assert_allclose(cached["score"], recomputed["score"], atol=1e-4)
        blocked = model.generate(sources, beam_size=beam_size, max_length=10, no_repeat_ngram_size=2)
        assert blocked == model.generate(sources, beam_size=beam_size, max_length=10, no_repeat_ngram_size=2,
                                         use_cache=False)


def table_steps(vocabulary, top_k, seed=0):
    """A `step` whose log-probabilities depend only on the previous token (a random table where the last token,
    the end, is rare: greedy decoding runs in a cycle), best first, `top_k` of them; and the table."""
    alphas = np.full(vocabulary, 0.3)
    alphas[-1] = 0.01
    table = np.log(np.random.default_rng(seed).dirichlet(alphas, size=vocabulary + 1))

    def step(t, parents, previous):
        rows_previous = np.full(len(parents), vocabulary) if previous is None else previous
        log_probabilities = table[rows_previous]
        ids = np.argsort(-log_probabilities, axis=1, kind="stable")[:, :top_k]
        return np.take_along_axis(log_probabilities, ids, axis=1), ids

    return step, table


def test_no_repeat_ngram_decoding_equals_hf_processor():
    import torch
    from transformers import NoRepeatNGramLogitsProcessor

    vocabulary, rows, max_length, end = 12, 5, 20, 11  # every row the same: the table ignores the source
    unblocked = greedy_search(table_steps(vocabulary, top_k=1)[0], rows, max_length, end)
    for size in (1, 2, 3):
        step, table = table_steps(vocabulary, top_k=1 + max_length)
        found = greedy_search(step, rows, max_length, end, no_repeat_ngram_size=size)
        processor = NoRepeatNGramLogitsProcessor(size)
        for tokens, _ in found:
            written, previous = [], vocabulary  # the table's start entry
            for t in range(max_length):
                input_ids = torch.tensor(written, dtype=torch.long).reshape(1, len(written))
                scores = processor(input_ids, torch.tensor(table[previous][None]))
                previous = int(scores.argmax())
                if previous == end:
                    break
                written.append(previous)
            assert tokens == written and tokens != unblocked[0][0]
            grams = [tuple(tokens[i:i + size]) for i in range(len(tokens) - size + 1)]
            assert len(grams) == len(set(grams))
    step, _ = table_steps(vocabulary, top_k=6 + max_length)
    for tokens, _ in beam_search(step, rows, 3, max_length, end, no_repeat_ngram_size=2):
        grams = [tuple(tokens[i:i + 2]) for i in range(len(tokens) - 1)]
        assert len(grams) == len(set(grams))


def test_keras_file_generates_the_same_in_a_fresh_process(memorised, pairs, tmp_path, fresh_python):
    model, _ = memorised
    model.save(tmp_path / "writer.keras")
    script = textwrap.dedent(f"""
        import json, keras
        import kerasbert
        model = keras.saving.load_model({str(tmp_path / "writer.keras")!r}, safe_mode=True)
        sources = {pairs["source"].tolist()!r}
        print(json.dumps(model.generate(sources)))
    """)
    result = fresh_python(script, timeout=300)
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == model.generate(pairs["source"].tolist())


def test_from_preset_sizes_the_inputs_and_warns_without_a_masked_lm_head(tiny_preset):
    with pytest.warns(UserWarning, match=r"no masked-LM head \(cls\.predictions\.\*\).*fit trains it"):
        model = kb.BertSeq2Seq.from_preset(tiny_preset, max_source_length=30, max_target_length=10)
    assert (model.max_source_length, model.max_target_length) == (30, 10)
    with pytest.raises(ValueError, match="do not fit the backbone's 64 positions"):
        kb.BertSeq2Seq.from_preset(tiny_preset, max_source_length=50, max_target_length=20)


def test_bad_inputs_are_named_before_any_computation(preprocessor, pairs):
    model = tiny_seq2seq(preprocessor, hidden_dim=16)
    long_target = pairs.assign(target=["a question of far more words than the sixteen tokens this model "
                                       "takes as its longest target"] + pairs["target"].tolist()[1:])
    too_long = r"max_target_length=16 .* row 0, has (\d+): .*max_target_length=\1 "
    with pytest.raises(kb.TargetTooLongError, match=too_long):
        model.fit(long_target, epochs=1, verbose=0)
    assert not model.compiled  # nothing ran
    with pytest.raises(ValueError, match=r"Column 'target' not found.*columns=\{'target': "):
        model.fit(pairs.rename(columns={"target": "question"}), verbose=0)
    with pytest.raises(ValueError, match=r"(?s)'source'.*empty or only whitespace, first at row 2"):
        model.fit(pairs.assign(source=["a", "b", " ", "d"]), verbose=0)
    with pytest.raises(ValueError, match=r"(?s)'target'.*missing \(NaN/None\), first at row 1.*dropna"):
        model.fit(pairs.assign(target=["a", np.nan, "c", "d"]), verbose=0)
    with pytest.raises(ValueError, match=r"empty or only whitespace"):
        model.generate(["a text", ""])
    with pytest.raises(ValueError, match=r"max_length <= 42"):
        model.generate(["a text"], max_length=43)
    with pytest.raises(ValueError, match="beam_size must be an int of at least 1"):
        model.generate(["a text"], beam_size=0)
    with pytest.raises(ValueError, match=r"no_repeat_ngram_size must be an int of at least 0, got -1"):
        model.generate(["a text"], no_repeat_ngram_size=-1)
    assert model.generate([]) == [] and model.predict([]).empty
