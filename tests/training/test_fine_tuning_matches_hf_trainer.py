"""kerasbert's default fine-tuning equals HF `Trainer`'s, step for step, on the same weights and batches.

Reference: transformers `BertForSequenceClassification` trained as HF `Trainer` trains it (torch AdamW,
betas 0.9/0.999, eps 1e-8, weight decay 0.01 except biases and LayerNorm weights,
`get_linear_schedule_with_warmup` over ceil(10%) of the steps, `clip_grad_norm_(1.0)`). Both start from
one tiny random checkpoint (HF `save_pretrained` -> `BertClassifier.from_preset`), dropout off so both
are deterministic, and see the same real sentences in the same batches. So a gap between the recipes'
accuracies and HF's is not in the optimizer, the schedule, the clipping or the head.
"""

import shutil

import numpy as np
import pytest
import tensorflow as tf

from kerasbert.data.shipped import load_dataset
from kerasbert.tasks.bert_classifier import BertClassifier

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

BATCH, BATCHES, EPOCHS, LEARNING_RATE, LENGTH = 16, 4, 8, 1e-3, 48


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, minilm_path):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=2,
    )
    folder = tmp_path_factory.mktemp("hf_classifier")
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    for name in ("vocab.txt", "tokenizer_config.json"):
        shutil.copy(minilm_path / name, folder / name)
    return folder


def hf_trainer_run(folder, batches, labels, hf_trainer_epochs):
    """HF Trainer's optimisation, written out; returns the epoch mean losses and the final model."""
    model = transformers.BertForSequenceClassification.from_pretrained(folder)
    batches = [{**batch, "labels": label} for batch, label in zip(batches, labels)]
    return hf_trainer_epochs(model, batches, EPOCHS, LEARNING_RATE), model.eval()


@pytest.mark.all_backends
def test_default_fit_takes_the_same_steps_as_hf_trainer(checkpoint, hf_trainer_epochs):
    classifier = BertClassifier.from_preset(
        str(checkpoint), num_classes=2, sequence_length=LENGTH, dropout=0.0,
        backbone_overrides={"dropout": 0.0, "attention_dropout": 0.0},
    )
    sentences = load_dataset("uci_sentiment")["train"].head(BATCH * BATCHES)
    classifier.preprocessor.pad_to_sequence_length = True
    packed = {k: np.asarray(v) for k, v in classifier.preprocessor(sentences["text"].tolist()).items()}
    labels = sentences["label"].to_numpy().astype("int64")
    assert 0.3 < labels.mean() < 0.7 and packed["padding_mask"].all(axis=1).mean() < 0.5  # real padding

    torch_batches = [
        {"input_ids": torch.from_numpy(packed["token_ids"][i:i + BATCH].astype("int64")),
         "token_type_ids": torch.from_numpy(packed["segment_ids"][i:i + BATCH].astype("int64")),
         "attention_mask": torch.from_numpy(packed["padding_mask"][i:i + BATCH].astype("int64"))}
        for i in range(0, BATCH * BATCHES, BATCH)]
    torch_labels = [torch.from_numpy(labels[i:i + BATCH]) for i in range(0, BATCH * BATCHES, BATCH)]
    hf_losses, hf_model = hf_trainer_run(checkpoint, torch_batches, torch_labels, hf_trainer_epochs)

    with torch.no_grad():  # the same start: the checkpoint's own head, not a fresh one
        start_logits = hf_model.__class__.from_pretrained(checkpoint).eval()(**torch_batches[0]).logits.numpy()
    np.testing.assert_allclose(classifier.predict_on_batch({k: v[:BATCH] for k, v in packed.items()}),
                               start_logits, atol=1e-5)

    dataset = tf.data.Dataset.from_tensor_slices((packed, labels)).batch(BATCH)
    history = classifier.fit(dataset, epochs=EPOCHS, learning_rate=LEARNING_RATE, shuffle=False, verbose=0)
    # Keras' own AdamW trails by 2e-4 here (its epsilon is added before bias correction).
    np.testing.assert_allclose(history.history["loss"], hf_losses, atol=2e-6)
    assert hf_losses[0] - hf_losses[-1] > 2e-3  # it trained: the comparison is not of two still models
    with torch.no_grad():
        hf_logits = np.concatenate([hf_model(**batch).logits.numpy() for batch in torch_batches])
    np.testing.assert_allclose(classifier.predict(dataset.map(lambda x, y: x), verbose=0), hf_logits,
                               atol=1e-5)
