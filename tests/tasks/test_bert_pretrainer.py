"""BertPretrainer on Jane Austen: the masked-LM loss, masking, variants, presets, HF export, reload, errors.

References: Google BERT's `run_pretraining.py` MLM loss (sum(loss * weight) / sum(weight)) computed by
hand, and `transformers.BertForPreTraining` (CPU torch) for the exported heads.
"""

import textwrap

import keras
import numpy as np
import pytest

from kerasbert.data.masking_config import MaskingConfig
from kerasbert.data.pretraining_examples import pretraining_examples
from kerasbert.data.shipped import load_dataset
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.roberta.roberta_backbone import RobertaBackbone
from kerasbert.tasks.bert_classifier import BertClassifier
from kerasbert.tasks.bert_masked_lm import BertMaskedLM
from kerasbert.tasks.bert_pretrainer import BertPretrainer

MASK_ID = 103  # "[MASK]" in the uncased vocabulary


def small_backbone():
    return BertBackbone(vocabulary_size=30522, num_layers=2, num_heads=2, hidden_dim=32,
                        intermediate_dim=64, max_sequence_length=128)


def chapters_of(split):
    paragraphs = load_dataset("jane_austen", split)
    return paragraphs.groupby(["book", "chapter"], sort=False)["text"].agg("\n".join).tolist()[1:]


@pytest.fixture(scope="module")
def chapters():
    """Sense & Sensibility, chapters 1-4 (each one document of about 3,000 tokens)."""
    return chapters_of("train")[:4]


@pytest.fixture(scope="module")
def held_out():
    """Persuasion, chapters 1-2."""
    return chapters_of("test")[:2]


def log_softmax(logits):
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


@pytest.fixture(scope="module")
def trained(real_preprocessor, chapters, held_out):
    keras.utils.set_random_seed(0)
    model = BertPretrainer(small_backbone(), real_preprocessor, max_sequence_length=64)
    before = model.evaluate(held_out, verbose=0)
    history = model.fit(chapters, epochs=3, batch_size=32, learning_rate=2e-3, verbose=0)
    after = model.evaluate(held_out, verbose=0)
    return model, before, history.history, after


def first_batch(model, documents):
    inputs, _, _ = next(iter(model.pretraining_dataset(documents, batch_size=8, dynamic=False)))
    return {name: value.numpy() for name, value in inputs.items()}


def test_mlm_loss_averages_over_the_real_masked_positions_only(real_preprocessor):
    model = BertPretrainer(small_backbone(), real_preprocessor, max_sequence_length=64)
    rng = np.random.default_rng(0)
    token_ids = rng.integers(1000, 30000, size=(3, 10)).astype("int32")
    padding_mask = (np.arange(10)[None] < np.array([[10], [8], [6]])).astype("int32")
    inputs = {"token_ids": token_ids * padding_mask, "segment_ids": np.zeros((3, 10), "int32"),
              "padding_mask": padding_mask,
              "mask_positions": np.array([[1, 4, 0, 0], [2, 3, 5, 0], [1, 0, 0, 0]], "int32")}
    mask_weights = np.array([[1, 1, 0, 0], [1, 1, 1, 0], [1, 0, 0, 0]], "float32")
    targets = {"mlm": rng.integers(1000, 30000, size=(3, 4)).astype("int32"),
               "nsp": np.array([0, 1, 1], "int32")}
    weights = {"mlm": mask_weights, "nsp": np.ones(3, "float32")}
    model.compile_defaults(total_steps=10)
    results = model.evaluate(inputs, targets, sample_weight=weights, batch_size=3, return_dict=True,
                             verbose=0)

    outputs = model.predict_on_batch(inputs)
    mlm_losses = -np.take_along_axis(log_softmax(outputs["mlm"]), targets["mlm"][..., None], -1)[..., 0]
    mlm_loss = (mlm_losses * mask_weights).sum() / mask_weights.sum()  # over the 6 real positions
    over_all_slots = (mlm_losses * mask_weights).sum() / mask_weights.size  # Keras' default: 12 slots
    nsp_loss = -log_softmax(outputs["nsp"])[np.arange(3), targets["nsp"]].mean()
    hits = (outputs["mlm"].argmax(-1) == targets["mlm"]) * mask_weights
    print(f"MLM loss {results['mlm_loss']:.5f} (hand {mlm_loss:.5f}, over all slots {over_all_slots:.5f})")
    assert results["mlm_loss"] == pytest.approx(mlm_loss, rel=1e-5)
    assert results["loss"] == pytest.approx(mlm_loss + nsp_loss, rel=1e-5)
    assert abs(results["mlm_loss"] - over_all_slots) > 4.0
    assert results["nsp_loss"] == pytest.approx(nsp_loss, rel=1e-5)
    assert results["mlm_accuracy"] == pytest.approx(hits.sum() / 6)
    assert results["mlm_perplexity"] == pytest.approx(np.exp(mlm_loss), rel=1e-4)
    assert results["nsp_accuracy"] == pytest.approx(np.mean(outputs["nsp"].argmax(-1) == targets["nsp"]))


def test_training_on_austen_lowers_the_loss(trained, held_out):
    model, before, history, after = trained
    print(f"held-out Persuasion before {before}\nafter {after}\nhistory {history}")
    assert set(history) == {"loss", "mlm_loss", "mlm_accuracy", "mlm_perplexity", "nsp_loss", "nsp_accuracy"}
    assert history["mlm_loss"][-1] < history["mlm_loss"][0] - 0.3
    assert after["mlm_loss"] < before["mlm_loss"] - 0.3
    assert after["mlm_accuracy"] > before["mlm_accuracy"] + 0.01
    assert after["mlm_perplexity"] == pytest.approx(np.exp(after["mlm_loss"]))
    assert after["loss"] == pytest.approx(after["mlm_loss"] + after["nsp_loss"])
    assert model.evaluate(held_out, verbose=0) == after  # examples and masks drawn with a fixed seed


def masked_epoch(dataset):
    """One pass over a pre-training dataset: every example's mask positions, masked token ids (a
    padded row each), mask ids and mask weights, in order."""
    positions, tokens, ids, weights = [], [], [], []
    for inputs, targets, sample_weights in dataset:
        positions.append(inputs["mask_positions"].numpy())
        tokens += list(inputs["token_ids"].numpy())
        ids.append(targets["mlm"].numpy())
        weights.append(sample_weights["mlm"].numpy())
    return np.concatenate(positions), tokens, np.concatenate(ids), np.concatenate(weights)


def test_dynamic_masks_change_every_epoch_static_masks_do_not(real_preprocessor, chapters):
    model = BertPretrainer(small_backbone(), real_preprocessor, max_sequence_length=64)
    documents = chapters[:2]
    dynamic = model.pretraining_dataset(documents, seed=3)
    first, second = masked_epoch(dynamic)[0], masked_epoch(dynamic)[0]
    changed = (first != second).any(axis=1).mean()
    print(f"dynamic masking: {changed:.0%} of the examples get a new mask in the second epoch")
    assert changed > 0.9
    np.testing.assert_array_equal(masked_epoch(model.pretraining_dataset(documents, seed=3))[0], first)

    static = model.pretraining_dataset(documents, seed=3, dynamic=False)
    positions, tokens, mask_ids, mask_weights = masked_epoch(static)
    np.testing.assert_array_equal(masked_epoch(static)[0], positions)
    original = pretraining_examples(documents, model.tokenizer, max_sequence_length=64, seed=3)["token_ids"]
    original = list(original.numpy())
    chosen = list(zip(*np.nonzero(mask_weights)))
    chosen_tokens = np.array([tokens[i][positions[i, j]] for i, j in chosen])
    text_tokens = sum(len(row) - 3 for row in original)  # all but [CLS] A [SEP] B [SEP]
    print(f"static masking: {len(chosen)} of {text_tokens} text tokens chosen, "
          f"{np.mean(chosen_tokens == MASK_ID):.1%} of them [MASK]")
    assert len(chosen) == pytest.approx(0.15 * text_tokens, rel=0.05)
    assert 0.7 < np.mean(chosen_tokens == MASK_ID) < 0.9
    np.testing.assert_array_equal([mask_ids[i, j] for i, j in chosen],  # targets: the original tokens
                                  [original[i][positions[i, j]] for i, j in chosen])


@pytest.mark.parametrize("next_sentence", [None, "sop"])
def test_next_sentence_variants(next_sentence, real_preprocessor, chapters, tmp_path):
    model = BertPretrainer(small_backbone(), real_preprocessor, next_sentence=next_sentence,
                           max_sequence_length=64, masking=MaskingConfig(dynamic=False))
    history = model.fit(chapters[:2], epochs=1, batch_size=32, verbose=0).history
    results = model.evaluate(chapters[2:3], verbose=0)
    schedule = model.optimizer.get_config()["learning_rate"]["config"]
    assert schedule["peak_learning_rate"] == 1e-4  # the BERT pre-training default
    mlm_names = {"mlm_loss", "mlm_accuracy", "mlm_perplexity"}
    if next_sentence is None:
        assert set(model.output) == {"mlm"} and model.nsp_head is None
        assert set(history) == {"loss"} | mlm_names and set(results) == {"loss"} | mlm_names
        config = (model.export_to_hf(tmp_path / "hf") / "config.json").read_text()
        assert '"BertForMaskedLM"' in config
    else:
        _, targets, _ = next(iter(model.pretraining_dataset(chapters[:2], batch_size=512)))
        order_labels = targets["nsp"].numpy()
        print(f"sentence order: {order_labels.mean():.0%} of {len(order_labels)} pairs swapped")
        assert 0.35 < order_labels.mean() < 0.65
        assert set(history) == set(results) == {"loss", "nsp_loss", "nsp_accuracy"} | mlm_names


def test_preset_round_trip_into_classifier_masked_lm_and_back(trained, held_out, tmp_path):
    model = trained[0]
    model.save_to_preset(tmp_path)
    classifier = BertClassifier.from_preset(str(tmp_path), num_classes=2)
    for ours, theirs in zip(model.backbone.weights, classifier.backbone.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)

    restored = BertPretrainer.from_preset(str(tmp_path))
    assert restored.max_sequence_length == 64 and restored.next_sentence == "nsp"
    for name, value in model.head_weights().items():
        np.testing.assert_array_equal(restored.head_weights()[name], value, err_msg=name)
    inputs = first_batch(model, held_out)
    expected = model.predict_on_batch(inputs)
    for name, value in restored.predict_on_batch(inputs).items():
        np.testing.assert_allclose(value, expected[name], atol=1e-5, err_msg=name)
    masked_lm = BertMaskedLM.from_preset(str(tmp_path))
    np.testing.assert_allclose(masked_lm.predict_on_batch(inputs), expected["mlm"], atol=1e-5)


def test_export_to_hf_matches_bert_for_pretraining(trained, held_out, tmp_path):
    torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    model = trained[0]
    folder = model.export_to_hf(tmp_path / "hf")
    reference = transformers.BertForPreTraining.from_pretrained(str(folder)).eval()
    inputs = first_batch(model, held_out)
    with torch.no_grad():
        hf = reference(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                       token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
                       attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long))
    hf_mlm = np.take_along_axis(hf.prediction_logits.numpy(), inputs["mask_positions"][..., None], axis=1)
    ours = model.predict_on_batch(inputs)
    mlm_difference = np.abs(ours["mlm"] - hf_mlm).max()
    nsp_difference = np.abs(ours["nsp"] - hf.seq_relationship_logits.numpy()).max()
    print(f"vs BertForPreTraining: MLM logits {mlm_difference:.1e}, NSP logits {nsp_difference:.1e}")
    assert mlm_difference <= 1e-4 and nsp_difference <= 1e-5

    from_hf = BertPretrainer.from_preset(str(folder), max_sequence_length=64)  # loads cls.* back
    for name, value in from_hf.predict_on_batch(inputs).items():
        np.testing.assert_allclose(value, ours[name], atol=1e-5, err_msg=name)


def test_saved_model_gives_the_same_outputs_in_a_fresh_process(trained, held_out, tmp_path, fresh_python):
    model = trained[0]
    inputs = first_batch(model, held_out)
    expected = model.predict_on_batch(inputs)
    model.save(tmp_path / "pretrainer.keras")
    np.savez(tmp_path / "inputs.npz", **inputs)
    script = textwrap.dedent(f"""
        import keras, numpy as np
        import kerasbert
        model = keras.saving.load_model({str(tmp_path / "pretrainer.keras")!r})  # safe mode
        inputs = dict(np.load({str(tmp_path / "inputs.npz")!r}))
        outputs = model.predict_on_batch(inputs)
        tied = model.mlm_head.token_embedding is model.backbone.token_embedding
        np.savez({str(tmp_path / "outputs.npz")!r}, tied=tied, **outputs)
    """)
    fresh_python(script)
    reloaded = np.load(tmp_path / "outputs.npz")
    assert bool(reloaded["tied"])
    for name in ("mlm", "nsp"):
        np.testing.assert_array_equal(reloaded[name], expected[name])


def test_from_preset_builds_offline_and_warns_without_a_checkpoint_head():
    fresh = BertPretrainer.from_preset("bert_mini_en_uncased", load_weights=False)
    assert fresh.backbone.num_layers == 4 and fresh.backbone.hidden_dim == 256
    assert fresh.mlm_head.token_embedding is fresh.backbone.token_embedding
    with pytest.warns(UserWarning, match="no masked-LM head"):
        minilm = BertPretrainer.from_preset("all_minilm_l6_v2_en")
    reference = BertBackbone.from_preset("all_minilm_l6_v2_en")
    np.testing.assert_array_equal(minilm.backbone.token_embedding.embeddings.numpy(),
                                  reference.token_embedding.embeddings.numpy())


def test_bad_input_is_reported_before_computation(real_preprocessor, chapters):
    model = BertPretrainer(small_backbone(), real_preprocessor, max_sequence_length=64)
    with pytest.raises(ValueError, match="No documents were given"):
        model.fit([], verbose=0)
    with pytest.raises(ValueError, match="empty"):
        model.fit(["", "   "], verbose=0)
    with pytest.raises(TypeError, match="fit takes documents.*got int"):
        model.fit(42, verbose=0)
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        model.fit("no/such/corpus", verbose=0)
    with pytest.raises(ValueError, match="do not pass `y`"):
        model.fit(chapters[:2], y=[0, 1], verbose=0)
    with pytest.raises(TypeError, match="evaluate on documents takes batch_size, verbose and seed"):
        model.evaluate(chapters[:2], return_errors=True)
    with pytest.raises(ValueError, match="BertMaskedLM.from_preset"):
        model.predict(["It is a truth universally [MASK]."])
    assert not model.compiled  # nothing was trained
    backbone = small_backbone()
    with pytest.raises(ValueError, match="next_sentence must be 'nsp'"):
        BertPretrainer(backbone, real_preprocessor, next_sentence="next")
    with pytest.raises(TypeError, match=r"masking takes a MaskingConfig, got str 'static'.*dynamic=False"):
        BertPretrainer(backbone, real_preprocessor, masking="static")
    with pytest.raises(ValueError, match=r"max_sequence_length must be an int from 5 to 128, got"):
        BertPretrainer(backbone, real_preprocessor, max_sequence_length=256)
    roberta = RobertaBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                              max_sequence_length=130)  # RoBERTa's positions start at padding id 1 + 1
    with pytest.raises(ValueError, match=r"max_sequence_length must be an int from 5 to 128, got"):
        BertPretrainer(roberta, real_preprocessor, max_sequence_length=130)
    with pytest.raises(ValueError, match="mask_token_rate \\+ random_token_rate must be at most 1"):
        BertPretrainer(backbone, real_preprocessor, masking={"mask_token_rate": 0.95})
