"""How fine-tuning trains BERT: modes (frozen, adapters, LoRA, layer mix), quantisation-aware training (Q8BERT),
the frozen-feature cache and task-weight files."""

from kerasbert.fine_tuning.modes import FineTuningConfig
from kerasbert.fine_tuning.quantization_aware import train_on_int8_grid
