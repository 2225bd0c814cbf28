"""The BigBird family as data: HF config keys and defaults, weight names (BERT's, the pooler a bare Linear
`pooler`; `bert.` in task models), masked-LM head names (BERT's `cls.predictions.*`)."""

import dataclasses

from kerasbert.families.big_bird.big_bird_backbone import BigBirdBackbone
from kerasbert.families.big_bird.big_bird_tokenizer import BigBirdTokenizer
from kerasbert.families.checkpoint_weights import BERT_BLOCK, HfNames
from kerasbert.families.family import Family
from kerasbert.families.family_heads import MaskedLMHeadNames
from kerasbert.layers.big_bird_encoder_block import BigBirdEncoderBlock
from kerasbert.layers.block_sparse_attention import BlockSparseSelfAttention
from kerasbert.layers.embedding import TokenSegmentPositionEmbedding
from kerasbert.presets.hf_families import BERT_CONFIG_KEYS, STOCK_BERT, HfFamily
from kerasbert.tokenizers.tokenizer_json import big_bird_settings, special_tokens_of

BIG_BIRD_CONFIG_KEYS = {**BERT_CONFIG_KEYS, "block_size": "block_size", "num_random_blocks": "num_random_blocks",
                        "attention_type": "attention_type"}
# HF BigBirdConfig's defaults of the keys a config.json may leave out (transformers 5.24).
BIG_BIRD_DEFAULTS = {
    "vocab_size": 50358, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "hidden_act": "gelu_new", "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 4096, "type_vocab_size": 2,
    "initializer_range": 0.02, "layer_norm_eps": 1e-12, "attention_type": "block_sparse", "block_size": 64,
    "num_random_blocks": 3,
}


@dataclasses.dataclass(frozen=True)
class BigBirdNames(HfNames):
    """BERT's weight names; the layers HF's model computes are BigBird's block and attention."""

    def stock_layers(self, backbone):
        """`(layer, the class HF's model computes it as)` of each computing layer of `backbone`."""
        yield backbone.embedding, TokenSegmentPositionEmbedding
        for block in backbone.encoder_blocks:
            yield block, BigBirdEncoderBlock
            yield block.attention, BlockSparseSelfAttention


def big_bird_tokenizer_settings(fast, settings):
    """`BigBirdTokenizer` settings: the special tokens the folder names. A `tokenizer.json` (which HF reads
    before the `spiece.model`) with another pipeline than transformers 5's is a `TokenizerJsonError`."""
    if fast is not None:
        big_bird_settings(fast, "tokenizer.json")
    return {"special_tokens": special_tokens_of(fast, settings, BigBirdTokenizer.default_special_tokens)}


FAMILY = Family(
    name="big_bird",
    backbone=BigBirdBackbone,
    tokenizer=BigBirdTokenizer,
    checkpoint=HfFamily(BIG_BIRD_CONFIG_KEYS, BIG_BIRD_DEFAULTS, STOCK_BERT, "BigBirdModel", "bert.",
                        required_values={"use_bias": True, "rescale_embeddings": False},
                        tokenizer_files=("spiece.model",), tokenizer_settings=big_bird_tokenizer_settings),
    weights=BigBirdNames(BERT_BLOCK, "encoder.layer.{index}", None, "pooler"),
    masked_lm_head=MaskedLMHeadNames("cls.predictions.", "cls.predictions.transform.dense",
                                     "cls.predictions.transform.LayerNorm", "cls.predictions.bias",
                                     "cls.predictions.decoder", None, "BigBirdForMaskedLM"),
)
