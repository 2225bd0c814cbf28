"""BigBird: BERT with block-sparse attention (global, window and random blocks), for inputs of 4,096 tokens."""

from kerasbert.families.big_bird.big_bird_backbone import BigBirdBackbone
from kerasbert.families.big_bird.big_bird_tokenizer import BigBirdTokenizer
from kerasbert.families.big_bird.family import FAMILY

__all__ = ["FAMILY", "BigBirdBackbone", "BigBirdTokenizer"]
