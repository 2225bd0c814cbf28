"""kerasbert's pre-training takes the same steps as HF `BertForPreTraining` on the same weights and batches.

Reference: transformers `BertForPreTraining` (MLM + NSP losses summed, MLM averaged over the masked
positions: labels -100 elsewhere) trained as HF `Trainer` trains it (torch AdamW, weight decay 0.01
except biases and LayerNorm weights, ceil(10%) linear warmup then decay, `clip_grad_norm_(1.0)`). Both
start from one tiny random HF checkpoint with both heads (`BertPretrainer.from_preset` loads them), dropout
off, and see the same real Austen batches with the same static masks. So a gap between the from-scratch
recipe and its HF reference is not in the heads, the losses or the optimisation.
"""

import shutil

import numpy as np
import pytest

from kerasbert.data.shipped import load_dataset
from kerasbert.tasks.bert_pretrainer import BertPretrainer, hf_pretraining_batch

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

BATCH, BATCHES, EPOCHS, LEARNING_RATE = 16, 3, 6, 2e-3


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, minilm_path):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )
    folder = tmp_path_factory.mktemp("hf_pretraining")
    transformers.BertForPreTraining(config).save_pretrained(folder)
    for name in ("vocab.txt", "tokenizer_config.json"):
        shutil.copy(minilm_path / name, folder / name)
    return folder


def persuasion_chapters(count):
    """The first `count` chapters of Persuasion (the shipped held-out novel), one string each."""
    return load_dataset("jane_austen")["test"].groupby("chapter")["text"].agg("\n".join).tolist()[:count]


def torch_batch(batch):
    return {name: torch.from_numpy(value) for name, value in hf_pretraining_batch(*batch).items()}


def test_default_fit_takes_the_same_steps_as_hf_bert_for_pretraining(checkpoint, hf_trainer_epochs):
    pretrainer = BertPretrainer.from_preset(str(checkpoint), max_sequence_length=64)
    assert pretrainer.backbone.dropout == 0.0
    dataset = pretrainer.pretraining_dataset(persuasion_chapters(6), BATCH, seed=0, dynamic=False,
                                             shuffle=True)
    dataset = dataset.take(BATCHES).cache()
    batches = list(dataset)
    assert [len(batch[1]["nsp"]) for batch in batches] == [BATCH] * BATCHES
    nsp = np.concatenate([batch[1]["nsp"] for batch in batches])
    assert 0.25 < nsp.mean() < 0.75  # both IsNext and NotNext pairs

    model = transformers.BertForPreTraining.from_pretrained(checkpoint)
    torch_batches = [torch_batch(batch) for batch in batches]
    hf_losses = hf_trainer_epochs(model, torch_batches, EPOCHS, LEARNING_RATE)

    history = pretrainer.fit(dataset, epochs=EPOCHS, learning_rate=LEARNING_RATE, verbose=0)
    np.testing.assert_allclose(history.history["loss"], hf_losses, rtol=2e-5)
    assert hf_losses[0] - hf_losses[-1] > 0.5  # it trained: not a comparison of two still models
    model.eval()
    with torch.no_grad():
        hf_output = model(**{k: v for k, v in torch_batches[0].items()
                             if k not in ("labels", "next_sentence_label")})
    outputs = pretrainer.predict_on_batch(batches[0][0])
    np.testing.assert_allclose(outputs["nsp"], hf_output.seq_relationship_logits.numpy(), atol=1e-4)
    positions = np.asarray(batches[0][0]["mask_positions"])
    hf_mlm = np.take_along_axis(hf_output.prediction_logits.numpy(), positions[:, :, None], axis=1)
    np.testing.assert_allclose(outputs["mlm"], hf_mlm, atol=1e-3)


def test_the_reference_loss_at_masked_positions_is_bert_for_pretraining_loss(checkpoint, hf_training):
    """The from-scratch HF reference projects only the masked positions onto the vocabulary; its loss
    and gradients must be `BertForPreTraining`'s own."""
    pretrainer = BertPretrainer.from_preset(str(checkpoint), max_sequence_length=64)
    batch = torch_batch(next(iter(pretrainer.pretraining_dataset(persuasion_chapters(4), BATCH, seed=0))))
    assert 0 < int((batch["labels"] != -100).sum()) < batch["labels"].numel() // 5

    model = transformers.BertForPreTraining.from_pretrained(checkpoint)
    gradients = []
    for loss_fn in (hf_training.model_loss, hf_training.pretraining_loss_at_masked_positions):
        model.zero_grad()
        loss = loss_fn(model, batch)
        loss.backward()
        gradients.append((loss.item(), [p.grad.clone() for p in model.parameters()]))
    (full_loss, full_gradients), (masked_loss, masked_gradients) = gradients
    assert masked_loss == pytest.approx(full_loss, rel=1e-6)
    for full, masked in zip(full_gradients, masked_gradients):
        torch.testing.assert_close(masked, full, rtol=1e-5, atol=1e-7)
