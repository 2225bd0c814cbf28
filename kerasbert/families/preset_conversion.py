"""Convert a checkpoint between formats: HF folder, Google TF checkpoint, kerasbert preset -> kerasbert or HF.

Task heads travel with the backbone (`cls.*` pre-training heads, `classifier.*`, `qa_outputs.*`, under
their HF names, and a fine-tuned classifier's `id2label` into HF), so a converted checkpoint loads into
the same task models as the original.

Examples:
    >>> convert_preset("uncased_L-2_H-128_A-2", "bert_tiny_kerasbert")             # Google -> kerasbert
    >>> convert_preset("bert_tiny_kerasbert", "bert_tiny_hf", format="hf")          # -> transformers
"""

from kerasbert.families.family import backbone_class_for, tokenizer_from_preset
from kerasbert.presets.kerasbert_format import write_kerasbert_folder
from kerasbert.presets.loading import load_checkpoint

FORMATS = ("kerasbert", "hf")
HEAD_PREFIXES = ("cls.", "classifier.", "qa_outputs.")


def convert_preset(source, destination, format="kerasbert", allow_pickle=False):
    """Read `source` (any preset `from_preset` reads) and write it to the folder `destination` in
    `format` ("kerasbert" or "hf"); returns the folder."""
    if format not in FORMATS:
        raise ValueError(f"format={format!r}: use one of {', '.join(FORMATS)}.")
    checkpoint = load_checkpoint(source, True, allow_pickle)
    backbone = backbone_class_for(checkpoint).from_checkpoint(checkpoint)
    tokenizer = tokenizer_from_preset(source)
    heads = {name: value for prefix in HEAD_PREFIXES for name, value in checkpoint.heads(prefix).items()}
    if format == "hf":
        return backbone.export_to_hf(destination, tokenizer, heads=heads, id2label=checkpoint.id2label)
    return write_kerasbert_folder(destination, backbone, tokenizer, task_config=checkpoint.task_config, heads=heads)
