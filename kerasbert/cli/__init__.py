"""The `kerasbert` command: fit, evaluate, predict, prepare-pretraining, pretrain, convert, export, presets and
serve.

`kerasbert --help` answers at once: TensorFlow is imported only by a command that needs it.

Example (shell):
    kerasbert fit uci_sentiment --preset all_minilm_l6_v2_en --epochs 2 --output sentiment.keras
    echo "what a lovely film" | kerasbert predict sentiment.keras -
"""

from kerasbert.cli.app import main

__all__ = ["main"]
