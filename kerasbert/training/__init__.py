"""Optimizer and schedule defaults for fine-tuning and pre-training."""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.training.default_optimizer import NO_DECAY_NAMES, create_optimizer, default_learning_rate
from kerasbert.training.distribution import join_processes
from kerasbert.training.lamb import Lamb
from kerasbert.training.optimizers import AdamW
from kerasbert.training.schedules import WarmupLinearDecay
from kerasbert.training.encoder_losses import (
    AnglELoss,
    CachedMultipleNegativesRankingLoss,
    ContrastiveLoss,
    CoSENTLoss,
    MatryoshkaLoss,
    MultipleNegativesRankingLoss,
    TripletLoss,
)
