"""ELECTRA pre-training: one step equals HF transformers on every backend, training on documents, presets, errors.

Reference: HF `ElectraForMaskedLM` (generator) and `ElectraForPreTraining` (discriminator), seeded random
tiny configs saved with `save_pretrained` (no real ELECTRA weights can be downloaded here). HF has no
combined ELECTRA step; the test builds it as ELECTRA does: one embedding module shared by both models,
generator MLM loss + 50 x discriminator loss (`BCEWithLogits` over the attended tokens), the same
replacements (both sides sample with the same uniform numbers by inverse CDF, and the test checks the sampled
ids agree), one SGD step.
"""

import copy

import keras
import numpy as np
import pytest

from kerasbert.data.pretraining_shards import prepare_pretraining
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.families.bert_preprocessor import BertPreprocessor
from kerasbert.families.checkpoint_weights import export_hf_weights, export_links
from kerasbert.families.electra.electra_backbone import ElectraBackbone
from kerasbert.families.electra.electra_weights import generator_links, replaced_token_head_links
from kerasbert.layers.replacement_sampler import ReplacementSampler
from kerasbert.tasks.bert_classifier import BertClassifier
from kerasbert.tasks.electra_pretrainer import ElectraPretrainer

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"word{i}" for i in range(5, 99)]
MASK_ID = 4
SIZES = {"vocab_size": len(VOCABULARY), "embedding_size": 16, "max_position_embeddings": 40, "num_hidden_layers": 2,
         "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
LEARNING_RATE = 0.05


def write_vocabulary(folder):
    (folder / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    return folder


@pytest.fixture(scope="module")
def hf_electra(tmp_path_factory):
    """(discriminator folder, generator folder, HF discriminator, HF generator): seed 0, the generator a quarter
    of the discriminator's width, both with the discriminator's embeddings."""
    torch.manual_seed(0)
    discriminator = transformers.ElectraForPreTraining(transformers.ElectraConfig(
        **SIZES, hidden_size=32, num_attention_heads=4, intermediate_size=64)).eval()
    generator = transformers.ElectraForMaskedLM(transformers.ElectraConfig(
        **SIZES, hidden_size=8, num_attention_heads=1, intermediate_size=16)).eval()
    generator.electra.embeddings.load_state_dict(discriminator.electra.embeddings.state_dict())
    folders = []
    for name, model in (("discriminator", discriminator), ("generator", generator)):
        folder = tmp_path_factory.mktemp(name)
        model.save_pretrained(str(folder))
        folders.append(write_vocabulary(folder))
    return (*folders, discriminator, generator)


def hf_step(discriminator, generator, inputs, original):
    """ELECTRA's step on copies of the HF models with shared embeddings: (losses, sampled ids, updated state
    dicts)."""
    discriminator, generator = copy.deepcopy(discriminator), copy.deepcopy(generator)
    generator.electra.embeddings = discriminator.electra.embeddings
    generator.generator_lm_head.weight = discriminator.electra.embeddings.word_embeddings.weight
    long = {name: torch.tensor(value, dtype=torch.long) for name, value in inputs.items()
            if name in ("token_ids", "segment_ids", "padding_mask")}
    real = inputs["mask_weights"] > 0
    rows, slots = np.nonzero(real)
    positions = inputs["mask_positions"][rows, slots]
    labels = torch.full(original.shape, -100, dtype=torch.long)
    labels[rows, positions] = torch.tensor(inputs["mask_ids"][rows, slots], dtype=torch.long)
    generated = generator(input_ids=long["token_ids"], token_type_ids=long["segment_ids"],
                          attention_mask=long["padding_mask"], labels=labels)
    # Inverse-CDF sampling with the same uniforms (the kerasbert sampler's rule), no gradient.
    logits = generated.logits.detach()[torch.arange(3)[:, None], torch.tensor(inputs["mask_positions"]).long()]
    cumulative = torch.cumsum(torch.softmax(logits, dim=-1), dim=-1)
    threshold = torch.tensor(inputs["sampling_uniforms"])[:, :, None] * cumulative[:, :, -1:]
    sampled = (cumulative <= threshold).sum(-1).clamp(max=len(VOCABULARY) - 1).numpy()
    corrupted = original.copy()
    corrupted[rows, positions] = sampled[rows, slots]
    discriminated = discriminator(input_ids=torch.tensor(corrupted, dtype=torch.long),
                                  token_type_ids=long["segment_ids"], attention_mask=long["padding_mask"],
                                  labels=torch.tensor(corrupted != original, dtype=torch.long))
    total = generated.loss + 50.0 * discriminated.loss
    total.backward()
    parameters = {id(p): p for model in (discriminator, generator) for p in model.parameters()}.values()
    with torch.no_grad():
        for parameter in parameters:
            parameter -= LEARNING_RATE * parameter.grad
    losses = {"loss": total.item(), "mlm_loss": generated.loss.item(), "rtd_loss": discriminated.loss.item()}
    states = [{name: value.numpy() for name, value in model.state_dict().items()}
              for model in (discriminator, generator)]
    return losses, np.where(real, sampled, 0), states


@pytest.mark.all_backends
def test_one_step_equals_hf_electra_for_masked_lm_plus_electra_for_pretraining(hf_electra, rtd_batch):
    discriminator_folder, generator_folder, hf_discriminator, hf_generator = hf_electra
    electra = ElectraPretrainer.from_preset(str(discriminator_folder), generator_preset=str(generator_folder),
                                            max_sequence_length=40)
    assert electra.generator_config["hidden_dim"] == 8 and electra.generator_config["dropout"] == 0.0
    inputs, original = rtd_batch(2, MASK_ID, (5, 99))
    sampled = keras.ops.convert_to_numpy(electra(inputs)["sampled_ids"])
    electra.compile(optimizer=keras.optimizers.SGD(LEARNING_RATE))
    logs = electra.train_on_batch(inputs, return_dict=True)

    losses, hf_sampled, (hf_discriminator_state, hf_generator_state) = hf_step(hf_discriminator, hf_generator,
                                                                               inputs, original)
    np.testing.assert_array_equal(np.where(inputs["mask_weights"] > 0, sampled, 0), hf_sampled)
    for name, value in losses.items():
        print(f"ELECTRA step {name}: kerasbert {float(logs[name]):.7f}  HF {value:.7f}")
        assert abs(float(logs[name]) - value) <= 1e-5 * abs(value)
    ours = {**{f"electra.{name}": value for name, value in export_hf_weights(electra.backbone).items()},
            **export_links(replaced_token_head_links(electra.rtd_head))}
    generator_ours = {(name if name.startswith("generator_") else f"electra.{name}"): value
                      for name, value in export_links(generator_links(electra.generator)).items()}
    diffs = [np.abs(value - reference[name]).max()
             for state, reference in ((ours, hf_discriminator_state), (generator_ours, hf_generator_state))
             for name, value in state.items()]
    moved = np.abs(ours["electra.embeddings.word_embeddings.weight"]
                   - keras.ops.convert_to_numpy(ElectraBackbone.from_preset(str(discriminator_folder))
                                                .token_embedding.embeddings)).max()
    print(f"updated weights: max |kerasbert - HF| {max(diffs):.2e} over {len(diffs)} tensors "
          f"(the step moved the word embeddings by up to {moved:.2e})")
    assert len(diffs) == len(hf_discriminator_state) + len(hf_generator_state) - 6  # HF's copies of the embeddings
    assert max(diffs) <= 1e-5 and moved > 1e-3


def test_sampler_writes_samples_only_at_real_masked_positions():
    logits = np.full((1, 3, 6), -30.0, "float32")
    logits[0, 0, 5] = logits[0, 1, 2] = logits[0, 2, 4] = 30.0  # certain samples: 5, 2, 4
    token_ids = np.array([[2, 4, 9, 4, 3]], "int32")  # masked at positions 1 and 3
    out = ReplacementSampler()(logits, token_ids, np.array([[1, 3, 0]]), np.array([[7, 2, 0]]),
                               np.array([[1.0, 1.0, 0.0]]), np.array([[0.5, 0.5, 0.5]]))
    out = {name: keras.ops.convert_to_numpy(value) for name, value in out.items()}
    assert out["sampled_ids"].tolist() == [[5, 2, 4]]
    assert out["corrupted_ids"].tolist() == [[2, 5, 9, 2, 3]]  # the padding slot leaves position 0 alone
    assert out["replaced"].tolist() == [[0, 1, 0, 0, 0]]  # position 3: the sample is the original id


def toy_documents():
    rng = np.random.default_rng(1)
    return ["\n".join(" ".join(f"word{i}" for i in rng.integers(5, 99, size=12)) + "." for _ in range(6))
            for _ in range(8)]


def tiny_electra():
    backbone = ElectraBackbone(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2, hidden_dim=16,
                               intermediate_dim=32, embedding_dim=8, max_sequence_length=32)
    return backbone


def test_fit_on_documents_trains_both_models(tmp_path):
    keras.utils.set_random_seed(0)
    tokenizer = BertTokenizer(vocabulary=str(write_vocabulary(tmp_path) / "vocab.txt"))
    electra = ElectraPretrainer(tiny_electra(), BertPreprocessor(tokenizer, sequence_length=32), max_sequence_length=32)
    before = [keras.ops.convert_to_numpy(v).copy() for v in (electra.generator.mlm_head.dense.kernel,
                                                              electra.rtd_head.dense.kernel)]
    history = electra.fit(toy_documents(), epochs=1, batch_size=4, learning_rate=1e-3, verbose=0).history
    assert set(history) == {"loss", "mlm_loss", "mlm_accuracy", "rtd_loss", "rtd_accuracy"}
    assert np.isclose(history["loss"][0], history["mlm_loss"][0] + 50 * history["rtd_loss"][0], rtol=0.05)
    for old, variable in zip(before, (electra.generator.mlm_head.dense.kernel, electra.rtd_head.dense.kernel)):
        assert np.abs(keras.ops.convert_to_numpy(variable) - old).max() > 0
    results = electra.evaluate(toy_documents(), verbose=0)
    assert results == electra.evaluate(toy_documents(), verbose=0)  # static masks and draws from seed 0
    assert 0.0 < results["replaced_fraction"] < 0.3 and np.isfinite(results["loss"])


def test_presets_and_keras_files_keep_both_models(hf_electra, rtd_batch, tmp_path):
    discriminator_folder, generator_folder, _, _ = hf_electra
    electra = ElectraPretrainer.from_preset(str(discriminator_folder), generator_preset=str(generator_folder),
                                            max_sequence_length=40)
    inputs, _ = rtd_batch(2, MASK_ID, (5, 99))
    expected = keras.tree.map_structure(keras.ops.convert_to_numpy, electra(inputs))
    electra.save_to_preset(tmp_path / "preset")
    electra.save(tmp_path / "electra.keras")
    for reloaded in (ElectraPretrainer.from_preset(str(tmp_path / "preset")),
                     keras.saving.load_model(tmp_path / "electra.keras")):
        assert reloaded.generator_config == electra.generator_config
        actual = keras.tree.map_structure(keras.ops.convert_to_numpy, reloaded(inputs))
        for name in expected:
            np.testing.assert_allclose(actual[name], expected[name], atol=1e-6)
    classifier = BertClassifier.from_preset(str(tmp_path / "preset"), num_classes=2)
    assert type(classifier.backbone) is ElectraBackbone
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(classifier.backbone.token_embedding.embeddings),
                                  keras.ops.convert_to_numpy(electra.backbone.token_embedding.embeddings))


def test_bad_input_is_a_named_error_before_any_model_is_built(hf_electra, tmp_path, minilm_path):
    discriminator_folder, generator_folder, _, _ = hf_electra
    with pytest.raises(ValueError, match="holds a 'bert' model; ElectraPretrainer trains an ELECTRA"):
        ElectraPretrainer.from_preset(str(minilm_path))
    with pytest.raises(ValueError, match="generator .* holds a 'bert' model"):
        ElectraPretrainer.from_preset(str(discriminator_folder), generator_preset=str(minilm_path))
    with pytest.raises(ValueError, match="has no masked-LM head"):  # a discriminator given as the generator
        ElectraPretrainer.from_preset(str(discriminator_folder), generator_preset=str(discriminator_folder))
    narrow = transformers.ElectraForMaskedLM(transformers.ElectraConfig(**{**SIZES, "embedding_size": 8},
                                                                     hidden_size=8, num_attention_heads=1,
                                                                     intermediate_size=16))
    narrow.save_pretrained(str(tmp_path / "narrow"))
    with pytest.raises(ValueError, match="cannot share the discriminator's embeddings: embedding width 8 vs 16"):
        ElectraPretrainer.from_preset(str(discriminator_folder), generator_preset=str(tmp_path / "narrow"))
    tokenizer = BertTokenizer(vocabulary=str(write_vocabulary(tmp_path) / "vocab.txt"))
    bert = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2, hidden_dim=16,
                        intermediate_dim=32, max_sequence_length=32)
    with pytest.raises(TypeError, match="trains an ElectraBackbone .* got BertBackbone"):
        ElectraPretrainer(bert, BertPreprocessor(tokenizer, sequence_length=32))
    with pytest.raises(ValueError, match=r"generator_config: unknown \['width'\], missing \['hidden_dim'\]"):
        ElectraPretrainer(tiny_electra(), BertPreprocessor(tokenizer, sequence_length=32), max_sequence_length=32,
                          generator_config={"num_layers": 1, "num_heads": 1, "width": 8, "intermediate_dim": 16})


def test_a_shard_stream_trains_and_resumes_with_the_same_masks_and_draws(tmp_path):
    tokenizer = BertTokenizer(vocabulary=str(write_vocabulary(tmp_path) / "vocab.txt"))
    for index, document in enumerate(toy_documents()):
        (tmp_path / f"doc{index}.txt").write_text(document, encoding="utf-8")
    prepare_pretraining(sorted(tmp_path.glob("doc*.txt")), tmp_path / "shards", tokenizer, num_workers=1)
    electra = ElectraPretrainer(tiny_electra(), BertPreprocessor(tokenizer, sequence_length=32), max_sequence_length=32)
    straight = [batch for _, batch in zip(range(3), electra.pretraining_dataset(tmp_path / "shards", batch_size=4))]
    resumed = next(iter(electra.pretraining_dataset(tmp_path / "shards", batch_size=4, start=2)))
    for name, value in straight[2].items():
        np.testing.assert_array_equal(resumed[name], value, err_msg=name)
    assert not np.array_equal(straight[0]["sampling_uniforms"], straight[1]["sampling_uniforms"])
    history = electra.fit(tmp_path / "shards", epochs=1, steps_per_epoch=2, batch_size=4, verbose=0).history
    assert np.isfinite(history["loss"][0]) and int(electra.optimizer.iterations) == 2
