"""Fine-tuning less than all of BERT: modes (frozen, adapters, LoRA, layer mix), the frozen-feature cache and
task-weight files."""

from kerasbert.fine_tuning.modes import FineTuningConfig
