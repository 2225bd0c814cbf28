"""GlobalTokens: which tokens attend globally in a Longformer, from the given mask and HF's task defaults."""

import keras
from keras import ops

# HF's defaults: none (LongformerModel), `<s>` (LongformerForSequenceClassification), the question, i.e. every
# token before the first `</s>` (LongformerForQuestionAnswering), every token after the `</s></s>` that ends the
# first segment (LongformerForMultipleChoice: the choice).
GLOBAL_TOKEN_RULES = ("none", "cls", "question", "after_question")


def check_global_tokens(global_tokens):
    """A ValueError naming the choices when `global_tokens` is not one of `GLOBAL_TOKEN_RULES`."""
    if global_tokens not in GLOBAL_TOKEN_RULES:
        raise ValueError(f"global_tokens={global_tokens!r}: use 'none' (only the given global_attention_mask), "
                         "'cls' (<s> too, HF's classifiers), 'question' (every token before the first </s> "
                         "too, HF's question answering) or 'after_question' (every token after the </s></s> that "
                         "ends the first segment too, HF's multiple choice).")


@keras.saving.register_keras_serializable(package="kerasbert")
class GlobalTokens(keras.layers.Layer):
    """`[B, T]` boolean: the real tokens that are global, by `global_attention_mask` or by the rule `global_tokens`
    (see `GLOBAL_TOKEN_RULES`; `sep_token_id` ends the question).

    Examples:
        >>> token_ids = ops.array([[0, 9, 9, 2, 2, 7, 2]])  # <s> question </s></s> context </s>
        >>> GlobalTokens("question", sep_token_id=2)(token_ids, ops.ones((1, 7)), ops.zeros((1, 7)))
        [[True, True, True, False, False, False, False]]
    """

    def __init__(self, global_tokens="none", sep_token_id=2, **kwargs):
        super().__init__(**kwargs)
        check_global_tokens(global_tokens)
        self.global_tokens = global_tokens
        self.sep_token_id = sep_token_id

    def call(self, token_ids, padding_mask, global_attention_mask):
        is_global = ops.cast(global_attention_mask, "bool")
        positions = ops.arange(ops.shape(token_ids)[1])[None, :]
        if self.global_tokens == "cls":
            is_global = ops.logical_or(is_global, positions == 0)
        elif self.global_tokens in ("question", "after_question"):
            question_end = ops.argmax(ops.cast(ops.equal(token_ids, self.sep_token_id), "int32"), axis=1)
            question_end = ops.cast(question_end, "int32")[:, None]
            rule = positions < question_end if self.global_tokens == "question" else positions > question_end + 1
            is_global = ops.logical_or(is_global, rule)
        return ops.logical_and(is_global, ops.cast(padding_mask, "bool"))

    def compute_output_spec(self, token_ids, padding_mask, global_attention_mask):
        return keras.KerasTensor(token_ids.shape, "bool")

    def get_config(self):
        return {**super().get_config(), "global_tokens": self.global_tokens, "sep_token_id": self.sep_token_id}
