"""`POST /predict` in Hugging Face Text Embeddings Inference's shapes, for a `BertClassifier`.

A request `{"inputs": ..., "raw_scores": false, "truncate": false}` whose `inputs` are TEI's (a text, a
`[text, text_pair]` pair, or a list of those) is TEI's; it gets TEI's answer: per input, every label with its
score, best first, `[{"score", "label"}, ...]`, or a list of those for a list of inputs. As TEI reads `inputs`, a
list of exactly two texts is one pair. Scores are the model's probabilities (softmax; sigmoid per label for a
multi-label model; the value itself for regression), or its logits with `raw_scores`. kerasbert's own requests
(a bare JSON list, objects of columns, `"columns"`) keep kerasbert's answer (`kerasbert.serving.app`).

Examples:
    >>> is_tei_request({"inputs": "I like you."})
    True
    >>> tei_rows(["What is BERT?", "A language model."])
    ([('What is BERT?', 'A language model.')], False)
"""

import asyncio

import numpy as np
import pandas as pd

from kerasbert.serving.json_routes import RouteError, budget_tokens, check_lengths, option


def sequence_of(item):
    """A TEI `Sequence` (a text, or a pair of two texts) as `(text, text_pair or None)`; None if it is not one."""
    if isinstance(item, str):
        return item, None
    if isinstance(item, list) and len(item) == 2 and all(isinstance(text, str) for text in item):
        return tuple(item)
    return None


def tei_rows(inputs):
    """TEI's `inputs` -> (`[(text, text_pair or None), ...]`, whether it was a list of inputs), read as TEI's
    untagged `Single(Sequence) | Batch([Sequence])`; RouteError if it is neither."""
    single = sequence_of(inputs)
    if single is not None:
        return [single], False
    rows = [sequence_of(item) for item in inputs] if isinstance(inputs, list) and inputs else [None]
    if None in rows:
        raise RouteError(422, "`inputs` must be a text, a [text, text_pair] pair, or a non-empty list of those.",
                         param="inputs")
    return rows, True


def is_tei_request(body):
    """Whether a `/predict` body is TEI's: an object of `inputs` (texts and pairs only) without kerasbert's
    `columns`."""
    if not isinstance(body, dict) or "columns" in body or "inputs" not in body:
        return False
    try:
        tei_rows(body["inputs"])
    except RouteError:
        return False
    return True


def tei_predict(model, batcher, limits, count_tokens):
    """The handler of TEI `/predict` bodies for `model` (a `BertClassifier`, or its `OnnxTask`); `batcher` predicts
    DataFrames in micro-batches; `count_tokens` is the model's `TokenCounter`."""

    async def predict(body):
        rows, batched = tei_rows(body.get("inputs"))
        if len(rows) > limits.max_inputs:
            raise RouteError(413, f"batch size {len(rows)} > maximum allowed batch size {limits.max_inputs}",
                             param="inputs")
        frame = frame_of_rows(model, rows, limits)
        counts = count_tokens(frame.iloc[:, 0])
        if frame.shape[1] == 2:
            counts = counts + count_tokens(frame.iloc[:, 1]) - 1  # [CLS] a [SEP] b [SEP]
        if getattr(model, "long_inputs", None) is None:
            check_lengths(counts, model, option(body, "truncate", bool, False))
        if option(body, "raw_scores", bool, False):
            logits, _ = await asyncio.to_thread(model.predict_outputs, frame, limits.model_batch, verbose=0)
            scores = np.asarray(logits, np.float32)
        else:
            tokens = budget_tokens(counts, model.sequence_length)
            scores = scores_of(model, await batcher.predict(frame, tokens=tokens))
        names = [str(label) for label in model.labels] if model.problem_type != "regression" else ["LABEL_0"]
        answers = [[{"score": float(row[i]), "label": names[i]} for i in np.argsort(-row, kind="stable")]
                   for row in scores.reshape(len(frame), -1)]
        return answers if batched else answers[0]

    return predict


def frame_of_rows(model, rows, limits):
    """TEI rows as the model's DataFrame; RouteError where the model reads the other kind (texts or pairs)."""
    pairs = [pair is not None for _, pair in rows]
    if any(pairs) and not all(pairs):
        raise RouteError(422, "`inputs` mixes texts and [text, text_pair] pairs; send one kind.", param="inputs")
    if all(pairs) != bool(model.uses_pairs):
        kind = "[text, text_pair] pairs" if model.uses_pairs else "single texts"
        raise RouteError(422, f"This classifier reads {kind}; send `inputs` as those.", param="inputs")
    if max(len(text) for row in rows for text in row if text is not None) > limits.max_chars:
        raise RouteError(413, f"a text has more than {limits.max_chars} characters; shorten it", param="inputs")
    columns = [model.columns["text"], model.columns["text_pair"]][:2 if all(pairs) else 1]
    return pd.DataFrame([row[:len(columns)] for row in rows], columns=columns)


def scores_of(model, predictions):
    """The classifier's predictions -> scores `[rows, labels]`: probabilities, or the regression value."""
    if model.problem_type == "regression":
        return predictions["prediction"].to_numpy(np.float32)[:, None]
    return np.stack(predictions["probabilities"].to_numpy()).astype(np.float32)

