"""DeBERTa-v3 replaced-token pre-training with gradient-disentangled embedding sharing (GDES).

Reference: DeBERTa's `RTDCombinedModel` with `embedding_sharing="gdes"` (microsoft/DeBERTa,
`apps/models/replaced_token_detection_model.py`) written on HF transformers' modules: a seeded tiny
`DebertaV2ForMaskedLM` generator (1 layer), a `DebertaV2Model` discriminator (2 layers) reading the token table
`generator_table.detach() + delta` (DeBERTa's forward hook, here through `inputs_embeds`), DeBERTa's
`LMMaskPredictionHead` (LayerNorm of `[CLS]` + token state, dense, GELU, classifier), loss = generator MLM loss +
50 x BCE over the attended tokens, the same replacements (inverse-CDF sampling with the same uniforms), one SGD
step. The generator's head is HF `DebertaV2ForMaskedLM`'s on the last layer (DeBERTa's code decodes with its enhanced
mask decoder, which HF has not: `tests/families/test_deberta_tasks.py -k decoder` checks kerasbert's against DeBERTa's code;
the fit test below trains a generator with it). No DeBERTa-v3 generator is published, so both checkpoints are seeded
random-init, saved as HF saves them.
"""

import copy

import keras
import numpy as np
import pytest
from safetensors.numpy import save_file

from kerasbert.families import DebertaV2Backbone, DebertaV2Tokenizer
from kerasbert.families.bert_preprocessor import BertPreprocessor
from kerasbert.families.checkpoint_weights import export_hf_weights, export_links, masked_lm_head_links
from kerasbert.families.family_heads import masked_lm_head_names
from kerasbert.tasks.bert_classifier import BertClassifier
from kerasbert.tasks.deberta_v3_pretrainer import DebertaV3Pretrainer, rtd_head_links

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TINY = {"vocab_size": 3001, "hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 64,
        "max_position_embeddings": 64, "relative_attention": True, "pos_att_type": ["p2c", "c2p"],
        "position_buckets": 8, "max_relative_positions": 16, "norm_rel_ebd": "layer_norm", "share_att_key": True,
        "position_biased_input": False, "type_vocab_size": 0, "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0}
LEARNING_RATE = 0.05
MASK_ID = 3000  # the [MASK] HF appends to the spm.model's 3,000 pieces


class ReplacedTokenHead(torch.nn.Module):
    """DeBERTa's `LMMaskPredictionHead` (its replaced-token detection head)."""

    def __init__(self, hidden):
        super().__init__()
        self.dense = torch.nn.Linear(hidden, hidden)
        self.LayerNorm = torch.nn.LayerNorm(hidden, eps=1e-7)
        self.classifier = torch.nn.Linear(hidden, 1)

    def forward(self, hidden_states):
        states = self.LayerNorm(hidden_states[:, :1, :] + hidden_states)
        return self.classifier(torch.nn.functional.gelu(self.dense(states))).squeeze(-1)


@pytest.fixture(scope="module")
def hf_deberta(tmp_path_factory, tokenizer_assets):
    """(discriminator folder, generator folder, HF discriminator, its head, HF generator): seeded, biases and
    norms moved off 0 and 1; the discriminator saved as DeBERTa-v3's published checkpoints are (`deberta.*`
    and `mask_predictions.*`), the generator as HF saves a `DebertaV2ForMaskedLM`."""
    torch.manual_seed(0)
    discriminator = transformers.DebertaV2Model(transformers.DebertaV2Config(**TINY, num_hidden_layers=2)).eval()
    head = ReplacedTokenHead(TINY["hidden_size"]).eval()
    generator = transformers.DebertaV2ForMaskedLM(transformers.DebertaV2Config(**TINY, num_hidden_layers=1)).eval()
    with torch.no_grad():
        for model in (discriminator, head, generator):
            for name, weight in model.named_parameters():
                if "LayerNorm" in name or name.endswith("bias"):
                    weight.add_(torch.randn_like(weight) * 0.1)
    spm = tokenizer_assets.train_deberta_spm(tmp_path_factory.mktemp("spm")) / "spm.model"
    folders = {name: tmp_path_factory.mktemp(name) for name in ("discriminator", "generator")}
    generator.save_pretrained(str(folders["generator"]))
    discriminator.config.architectures = ["DebertaV2ForMaskedLM"]
    discriminator.config.save_pretrained(str(folders["discriminator"]))
    state = {**{f"deberta.{name}": value for name, value in discriminator.state_dict().items()},
             **{f"mask_predictions.{name}": value for name, value in head.state_dict().items()}}
    save_file({name: value.numpy() for name, value in state.items()},
              str(folders["discriminator"] / "model.safetensors"), metadata={"format": "pt"})
    for folder in folders.values():
        (folder / "spm.model").write_bytes(spm.read_bytes())
    return folders["discriminator"], folders["generator"], discriminator, head, generator


def reference_step(discriminator, head, generator, inputs, original):
    """DeBERTa's GDES step on copies of the HF models: (losses, sampled ids, the generator's, discriminator's and
    head's states after one SGD step, the discriminator's token table `generator_table + delta` after it)."""
    discriminator, head, generator = (copy.deepcopy(model) for model in (discriminator, head, generator))
    table = generator.deberta.embeddings.word_embeddings.weight
    delta = torch.nn.Parameter(discriminator.embeddings.word_embeddings.weight.detach() - table.detach())
    mask = torch.tensor(inputs["padding_mask"], dtype=torch.long)
    real = inputs["mask_weights"] > 0
    rows, slots = np.nonzero(real)
    positions = inputs["mask_positions"][rows, slots]
    labels = torch.full(original.shape, -100, dtype=torch.long)
    labels[rows, positions] = torch.tensor(inputs["mask_ids"][rows, slots], dtype=torch.long)
    generated = generator(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long), attention_mask=mask,
                          labels=labels)
    logits = generated.logits.detach()[torch.arange(3)[:, None], torch.tensor(inputs["mask_positions"]).long()]
    cumulative = torch.cumsum(torch.softmax(logits, dim=-1), dim=-1)
    threshold = torch.tensor(inputs["sampling_uniforms"])[:, :, None] * cumulative[:, :, -1:]
    sampled = (cumulative <= threshold).sum(-1).clamp(max=TINY["vocab_size"] - 1).numpy()
    corrupted = original.copy()
    corrupted[rows, positions] = sampled[rows, slots]
    shared = table.detach() + delta  # gradient-disentangled: the discriminator's loss reaches delta only
    hidden = discriminator(inputs_embeds=shared[torch.tensor(corrupted, dtype=torch.long)],
                           attention_mask=mask).last_hidden_state
    attended = mask.bool()
    rtd_loss = torch.nn.functional.binary_cross_entropy_with_logits(
        head(hidden)[attended], torch.tensor(corrupted != original, dtype=torch.float32)[attended])
    total = generated.loss + 50.0 * rtd_loss
    total.backward()
    with torch.no_grad():
        for parameter in [*discriminator.parameters(), *head.parameters(), *generator.parameters(), delta]:
            if parameter.grad is not None:
                parameter -= LEARNING_RATE * parameter.grad
    losses = {"loss": total.item(), "mlm_loss": generated.loss.item(), "rtd_loss": rtd_loss.item()}
    states = [{name: value.numpy() for name, value in model.state_dict().items()}
              for model in (generator, discriminator, head)]
    return losses, np.where(real, sampled, 0), states, (table + delta).detach().numpy()


@pytest.mark.all_backends
def test_one_step_equals_deberta_rtd_with_gradient_disentangled_sharing(hf_deberta, rtd_batch):
    discriminator_folder, generator_folder, hf_discriminator, hf_head, hf_generator = hf_deberta
    deberta = DebertaV3Pretrainer.from_preset(str(discriminator_folder), generator_preset=str(generator_folder),
                                              max_sequence_length=64)
    assert deberta.generator_config["num_layers"] == 1 and deberta.backbone.num_layers == 2
    inputs, original = rtd_batch(1, MASK_ID, (4, 3000))
    sampled = keras.ops.convert_to_numpy(deberta(inputs)["sampled_ids"])
    deberta.compile(optimizer=keras.optimizers.SGD(LEARNING_RATE))
    with deberta.training_scope():
        logs = deberta.train_on_batch(inputs, return_dict=True)

    losses, hf_sampled, states, hf_table = reference_step(hf_discriminator, hf_head, hf_generator, inputs, original)
    np.testing.assert_array_equal(np.where(inputs["mask_weights"] > 0, sampled, 0), hf_sampled)
    for name, value in losses.items():
        print(f"DeBERTa-v3 GDES step {name}: kerasbert {float(logs[name]):.7f}  reference {value:.7f}")
        assert abs(float(logs[name]) - value) <= 1e-5 * abs(value)
    generator_state, discriminator_state, head_state = states
    names = masked_lm_head_names("deberta-v2")  # transformers 5 saves a new model's head as cls.predictions.*
    names = names if any(name.startswith(names.prefix) for name in generator_state) else names.alternative
    ours = [({**{f"deberta.{name}": value for name, value in export_hf_weights(deberta.generator.backbone).items()},
              **export_links(masked_lm_head_links(deberta.generator.mlm_head, "deberta-v2", names))},
             generator_state),
            (export_hf_weights(deberta.backbone), {**discriminator_state,
                                                   "embeddings.word_embeddings.weight": hf_table}),
            ({name.removeprefix("mask_predictions."): value
              for name, value in export_links(rtd_head_links(deberta.rtd_head)).items()}, head_state)]
    diffs = {name: np.abs(value - reference[name]).max() for state, reference in ours for name, value in state.items()}
    generator_moved = np.abs(generator_state["deberta.embeddings.word_embeddings.weight"]
                             - hf_generator.deberta.embeddings.word_embeddings.weight.detach().numpy()).max()
    print(f"updated weights: max |kerasbert - reference| {max(diffs.values()):.2e} over {len(diffs)} tensors; "
          f"the step moved the generator's table by up to {generator_moved:.2e}")
    unmatched = {name for _, reference in ours for name in reference} - set(diffs)
    assert unmatched == {f"{names.decoder}.weight", f"{names.decoder}.bias"}  # HF's tied copies of the table and bias
    assert max(diffs.values()) <= 1e-5 and generator_moved > 1e-4


def test_masked_lm_loss_moves_only_the_generator_table_and_rtd_loss_only_delta(hf_deberta, rtd_batch):
    discriminator_folder, generator_folder, *_ = hf_deberta
    deberta = DebertaV3Pretrainer.from_preset(str(discriminator_folder), generator_preset=str(generator_folder),
                                              max_sequence_length=64)
    inputs, _ = rtd_batch(1, MASK_ID, (4, 3000))
    table, delta = deberta.generator.token_embedding.embeddings, deberta.embedding_sharing.delta
    tf = pytest.importorskip("tensorflow")
    for loss_name, moved, still in (("mlm", table, delta), ("rtd", delta, table)):
        with tf.GradientTape() as tape:
            outputs = deberta(inputs, training=True)
            if loss_name == "mlm":
                loss = keras.ops.mean(keras.ops.sparse_categorical_crossentropy(inputs["mask_ids"], outputs["mlm"],
                                                                                from_logits=True))
            else:
                loss = keras.ops.mean(keras.ops.binary_crossentropy(outputs["replaced"], outputs["rtd"],
                                                                    from_logits=True))
        moving, standing = tape.gradient(loss, [moved.value, still.value])
        assert standing is None or not np.any(keras.ops.convert_to_numpy(standing)), loss_name
        assert np.abs(keras.ops.convert_to_numpy(tf.convert_to_tensor(moving))).max() > 0, loss_name


def test_fit_on_text_then_the_discriminator_fine_tunes_and_reloads(hf_deberta, rtd_batch, tmp_path):
    discriminator_folder, *_ = hf_deberta
    tokenizer = DebertaV2Tokenizer.from_preset(str(discriminator_folder))
    backbone = DebertaV2Backbone.from_preset(str(discriminator_folder))
    deberta = DebertaV3Pretrainer(backbone, BertPreprocessor(tokenizer, sequence_length=32), max_sequence_length=32,
                                  generator_config={"enhanced_mask_decoder": True})  # as DeBERTa's own generator
    assert deberta.generator_config["num_layers"] == 1  # half the discriminator's two
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(deberta.embedding_sharing.delta), 0.0)
    positions = deberta.generator.backbone.mask_decoder.position_embedding.embeddings
    fresh_positions = keras.ops.convert_to_numpy(positions)
    documents = [" ".join(["It is a truth universally acknowledged, that a single man in possession of a good "
                           "fortune, must be in want of a wife."] * 3)] * 6
    history = deberta.fit(documents, epochs=1, batch_size=4, learning_rate=1e-3, verbose=0).history
    assert np.isclose(history["loss"][0], history["mlm_loss"][0] + 50 * history["rtd_loss"][0], rtol=0.05)
    table = keras.ops.convert_to_numpy(deberta.generator.token_embedding.embeddings)
    delta = keras.ops.convert_to_numpy(deberta.embedding_sharing.delta)
    folded = keras.ops.convert_to_numpy(deberta.backbone.token_embedding.embeddings)
    np.testing.assert_allclose(folded, table + delta, atol=1e-6)  # the discriminator keeps E_G + delta
    assert np.abs(delta).max() > 0 and deberta.backbone.token_embedding.embeddings.trainable
    assert np.abs(keras.ops.convert_to_numpy(positions) - fresh_positions).max() > 0  # the decoder's table learns

    inputs, _ = rtd_batch(1, MASK_ID, (4, 3000))
    inputs = {name: value[:, :10] for name, value in inputs.items()}
    expected = keras.tree.map_structure(keras.ops.convert_to_numpy, deberta(inputs))
    deberta.save_to_preset(tmp_path / "preset")
    deberta.save(tmp_path / "deberta.keras")
    for reloaded in (DebertaV3Pretrainer.from_preset(str(tmp_path / "preset")),
                     keras.saving.load_model(tmp_path / "deberta.keras")):
        actual = keras.tree.map_structure(keras.ops.convert_to_numpy, reloaded(inputs))
        for name in expected:
            np.testing.assert_allclose(actual[name], expected[name], atol=1e-5, err_msg=name)
    classifier = BertClassifier.from_preset(str(tmp_path / "preset"), num_classes=2)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(classifier.backbone.token_embedding.embeddings), folded)
    assert classifier.predict(["A single man of good fortune."]).shape[0] == 1


def test_bad_options_are_named_errors_before_any_model_is_built(hf_deberta, minilm_path):
    discriminator_folder, *_ = hf_deberta
    backbone = DebertaV2Backbone.from_preset(str(discriminator_folder))
    preprocessor = BertPreprocessor(DebertaV2Tokenizer.from_preset(str(discriminator_folder)), sequence_length=32)
    with pytest.raises(ValueError, match=r"hidden_dim 16 vs 32 .* its vocabulary and width are the discriminator's"):
        DebertaV3Pretrainer(backbone, preprocessor, generator_config={"hidden_dim": 16})
    with pytest.raises(ValueError, match=r"unknown \['layers'\]"):
        DebertaV3Pretrainer(backbone, preprocessor, generator_config={"layers": 1})
    with pytest.raises(ValueError, match="holds a 'bert' model; DebertaV3Pretrainer reads DeBERTa"):
        DebertaV3Pretrainer.from_preset(str(minilm_path))
    absolute = DebertaV2Backbone(vocabulary_size=3001, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                                 position_biased_input=True, max_sequence_length=32)
    with pytest.raises(ValueError, match="position_biased_input=True"):
        DebertaV3Pretrainer(absolute, preprocessor)
