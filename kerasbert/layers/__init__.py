"""Research building blocks: keras.Layer subclasses written with keras.ops only."""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.layers.adapter import Adapter
from kerasbert.layers.attention import MultiHeadSelfAttention
from kerasbert.layers.axial_position_embedding import AxialPositionEmbedding
from kerasbert.layers.bottleneck_attention import BottleneckAttention
from kerasbert.layers.deberta_embedding import DebertaEmbedding, RelativeEmbeddingTable
from kerasbert.layers.deberta_encoder_block import DebertaEncoderBlock
from kerasbert.layers.disentangled_attention import DisentangledSelfAttention, relative_position_index
from kerasbert.layers.embedding import TokenSegmentPositionEmbedding
from kerasbert.layers.encoder_block import TransformerEncoderBlock
from kerasbert.layers.geglu_feed_forward import GegluFeedForward
from kerasbert.layers.heads import MaskedLMHead, NSPHead, ReplacedTokenHead
from kerasbert.layers.int8_grid import fake_int8
from kerasbert.layers.local_self_attention import ChunkedLocalSelfAttention
from kerasbert.layers.longformer_attention import LongformerSelfAttention
from kerasbert.layers.longformer_encoder_block import LongformerEncoderBlock
from kerasbert.layers.lora import LoraConfig, LowRankUpdate
from kerasbert.layers.lsh_self_attention import LshSelfAttention
from kerasbert.layers.mobilebert_embedding import MobileBertEmbedding
from kerasbert.layers.mobilebert_encoder_block import MobileBertEncoderBlock
from kerasbert.layers.modernbert_encoder_block import ModernBertEncoderBlock
from kerasbert.layers.no_norm import NoNorm
from kerasbert.layers.relative_attention import XLNetRelativeAttention
from kerasbert.layers.relative_position_encoding import relative_positional_encoding
from kerasbert.layers.relative_segment_encoding import relative_segment_encoding
from kerasbert.layers.replacement_sampler import ReplacementSampler
from kerasbert.layers.reversible_block import ReversibleBlock
from kerasbert.layers.rotary_attention import RotarySelfAttention
from kerasbert.layers.rotary_embedding import RotaryEmbedding
from kerasbert.layers.scalar_mix import ScalarMix
from kerasbert.layers.sentence_pooling import SentencePooling
from kerasbert.layers.span_boundary_head import SpanBoundaryHead
from kerasbert.layers.task_head import DenseTaskHead
from kerasbert.layers.xlnet_feed_forward import XLNetFeedForward
from kerasbert.layers.xlnet_lm_head import XLNetLMHead
