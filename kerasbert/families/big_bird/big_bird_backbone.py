"""BigBirdBackbone: BERT's encoder with BigBird's block-sparse attention, for inputs of 4,096 tokens."""

import keras

from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.checkpoint_weights import assign_links, dense_links, norm_links
from kerasbert.layers.big_bird_encoder_block import BigBirdEncoderBlock
from kerasbert.layers.big_bird_qa_head import BigBirdQuestionAnsweringHead
from kerasbert.layers.block_sparse_attention import check_block_sparse

CLASSIFIER = "BigBirdForSequenceClassification"  # its head: dense + `hidden_act` on [CLS], then `out_proj`
# bigbird-roberta-base's sizes and settings (HF `BigBirdConfig` defaults) where they are not BERT's.
BIG_BIRD_DEFAULTS = {"max_sequence_length": 4096, "activation": "gelu_approximate", "padding_token_id": None}


@keras.saving.register_keras_serializable(package="kerasbert")
class BigBirdBackbone(BertBackbone):
    """BigBird (Zaheer et al., 2020, ITC) as HF `BigBirdModel` computes it: a `BertBackbone` (BERT's embeddings,
    absolute positions, post-LN blocks, the `[CLS]` pooler) whose blocks attend block-sparsely
    (`BlockSparseSelfAttention`: global first and last blocks, a three-block window and random blocks), and
    fully on inputs of at most `(5 + 2 * num_random_blocks) * block_size` tokens, as HF. Defaults are
    google/bigbird-roberta-base's; other arguments are `BertBackbone`'s (adapters and LoRA included).

    Args:
        block_size, num_random_blocks: HF `block_size` (64), `num_random_blocks` (3).
        attention_type: "block_sparse", or "original_full" (BERT's attention everywhere; HF `attention_type`).
            Probabilities (`output_attentions`) come only with "original_full".

    Examples:
        >>> backbone = BigBirdBackbone.from_preset("my_bigbird_folder")
        >>> BigBirdBackbone(num_layers=2, hidden_dim=64, num_heads=2, intermediate_dim=128).count_params()
        3556416
    """

    family = "big_bird"
    # Fine-tuned HF BigBird task models' logits layers (on the tokens, on the pooled output); the answerer's
    # comes after a feed-forward block (`task_transform`).
    hf_heads = {"BertTokenClassifier": ("classifier", "BigBirdForTokenClassification"),
                "BertMultipleChoice": ("classifier", "BigBirdForMultipleChoice"),
                "BertClassifier": ("classifier.out_proj", CLASSIFIER),
                "BertQuestionAnswerer": ("qa_classifier.qa_outputs", "BigBirdForQuestionAnswering")}
    masks_question_logits = True  # HF's answerer takes 1e6 from the question's span logits (QuestionLogitsMask)

    def __init__(self, vocabulary_size=50358, num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072,
                 block_size=64, num_random_blocks=3, attention_type="block_sparse", **kwargs):
        check_block_sparse(block_size, num_random_blocks, attention_type)
        if attention_type == "block_sparse" and kwargs.get("output_attentions"):
            raise ValueError("Block-sparse attention has no [T, T] probabilities to output: build the backbone "
                             "with attention_type='original_full' to read them.")
        kwargs.pop("encoder_block", None)  # from a saved config: always BigBird's block, with these settings
        kwargs.pop("block_settings", None)
        settings = {"block_size": block_size, "num_random_blocks": num_random_blocks, "attention_type": attention_type}
        super().__init__(vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
                         encoder_block=BigBirdEncoderBlock, block_settings=settings,
                         **{**BIG_BIRD_DEFAULTS, **kwargs})
        self.block_size = block_size
        self.num_random_blocks = num_random_blocks
        self.attention_type = attention_type

    @classmethod
    def from_checkpoint(cls, checkpoint, **overrides):
        """`BertBackbone.from_checkpoint`; from a fine-tuned `BigBirdForSequenceClassification`, the pooler is its
        head's `classifier.dense` with the blocks' activation (HF's head reads [CLS] so, not through the pooler)."""
        head = checkpoint.heads("classifier.dense.", CLASSIFIER)
        if head:
            overrides = {"pooler_activation": checkpoint.backbone_config["activation"], **overrides}
        backbone = super().from_checkpoint(checkpoint, **overrides)
        if head:
            assign_links(dense_links(backbone.pooler, "classifier.dense"), head, checkpoint.source)
        return backbone

    def task_transform(self, task_name, reads, name):
        """The question answerer's feed-forward block before `qa_outputs` (HF `BigBirdForQuestionAnsweringHead`:
        BERT's feed-forward sizes, activation and epsilon), None for the other task models. `name`: its name."""
        if task_name != "BertQuestionAnswerer":
            return None
        return BigBirdQuestionAnsweringHead(self.intermediate_dim, self.activation, self.dropout,
                                            self.layer_norm_epsilon, self.initializer_range, name=name)

    @staticmethod
    def task_transform_links(transform):
        """`(variable, hf_names, kind)` of `task_transform`'s block under HF's `qa_classifier.*` names."""
        yield from dense_links(transform.inner_dense, "qa_classifier.intermediate.dense")
        yield from dense_links(transform.output_dense, "qa_classifier.output.dense")
        yield from norm_links(transform.layer_norm, "qa_classifier.output.LayerNorm")

    def get_config(self):
        config = super().get_config()
        for name in ("encoder_block", "block_settings"):
            config.pop(name)
        return {**config, **self.block_settings}
