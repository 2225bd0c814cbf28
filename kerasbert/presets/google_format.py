"""Original Google TF checkpoints: `bert_config.json`, `bert_model.ckpt.*`, `vocab.txt`.

Variable names are those of google-research/bert (`bert/encoder/layer_0/attention/self/
query/kernel`, ...). They are translated to HF names in torch layout, the canonical form
every kerasbert reader returns.
"""

import json
import re
from pathlib import Path

import numpy as np

from kerasbert.presets.checkpoint import Checkpoint, CheckpointError
from kerasbert.presets.hf_families import HF_ACTIVATIONS, backbone_config_from_hf
from kerasbert.presets.hf_format import read_json

# google-research/bert's `gelu` is the tanh approximation.
GOOGLE_ACTIVATIONS = {**HF_ACTIVATIONS, "gelu": "gelu_approximate"}
# A bert_config.json written by kerasbert records the exact activation under this extra key
# (Google's and HF's config readers ignore unknown keys).
ACTIVATION_KEY = "kerasbert_activation"
SKIPPED = re.compile(r"(adam_[mv]|global_step|Momentum|_slot_|/\.ATTRIBUTES|bad_steps|good_steps|loss_scale)")


# Names whose layout differs from the generic rule (no `bert/` prefix, [out, in] already).
SPECIAL_NAMES = {
    "cls/predictions/output_bias": "cls.predictions.bias",
    "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",
    "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
}
SPECIAL_NAMES_HF = {hf: google for google, hf in SPECIAL_NAMES.items()}


def google_to_hf_name(name):
    """`bert/encoder/layer_0/output/dense/kernel` -> (`encoder.layer.0.output.dense.weight`, transpose)."""
    if name in SPECIAL_NAMES:
        return SPECIAL_NAMES[name], False
    name = re.sub(r"^bert/", "", re.sub(r"layer_(\d+)", r"layer.\1", name))
    parts = name.split("/")
    leaf = parts[-1]
    if leaf.endswith("_embeddings"):
        return ".".join(parts + ["weight"]), False
    parts[-1] = {"kernel": "weight", "gamma": "weight", "beta": "bias"}.get(leaf, leaf)
    return ".".join(parts), leaf == "kernel"


def hf_to_google_name(name):
    """Inverse of `google_to_hf_name`: (`google name`, transpose)."""
    if name in SPECIAL_NAMES_HF:
        return SPECIAL_NAMES_HF[name], False
    parts = re.sub(r"layer\.(\d+)", r"layer_\1", name).split(".")
    prefix = [] if parts[0] == "cls" else ["bert"]
    if parts[-2].endswith("_embeddings"):
        return "/".join(prefix + parts[:-1]), False
    if parts[-2] == "LayerNorm":
        parts[-1] = {"weight": "gamma", "bias": "beta"}[parts[-1]]
        return "/".join(prefix + parts), False
    transpose = parts[-1] == "weight"
    if transpose:
        parts[-1] = "kernel"
    return "/".join(prefix + parts), transpose


def find_checkpoint_prefix(folder):
    indexes = sorted(folder.glob("*.ckpt*.index"))
    if not indexes:
        raise CheckpointError(f"{folder} has bert_config.json but no bert_model.ckpt.index/.data files.")
    return str(indexes[0])[: -len(".index")]


def read_google_folder(folder, load_weights=True):
    """Read an original Google BERT checkpoint folder into a `Checkpoint`.

    Examples:
        >>> read_google_folder(Path("uncased_L-12_H-768_A-12")).backbone_config["hidden_dim"]
        768
    """
    import tensorflow as tf

    folder = Path(folder)
    google_config = read_json(folder / "bert_config.json")
    activations = GOOGLE_ACTIVATIONS
    if ACTIVATION_KEY in google_config:
        google_config = {**google_config, "hidden_act": google_config[ACTIVATION_KEY]}
        activations = {value: value for value in set(HF_ACTIVATIONS.values())}
    config = backbone_config_from_hf(google_config, folder / "bert_config.json", activations)
    vocabulary = folder / "vocab.txt"
    state_dict = None
    if load_weights:
        prefix = find_checkpoint_prefix(folder)
        try:
            reader = tf.train.load_checkpoint(prefix)
            names = [n for n in reader.get_variable_to_shape_map() if not SKIPPED.search(n)]
            state_dict = {}
            for name in names:
                hf_name, transpose = google_to_hf_name(name)
                value = np.asarray(reader.get_tensor(name), dtype=np.float32)
                state_dict[hf_name] = value.T if transpose else value
        except (tf.errors.OpError, ValueError, IndexError, RuntimeError) as error:
            raise CheckpointError(
                f"{prefix} cannot be read ({type(error).__name__}: {error}); the checkpoint files "
                "are truncated or corrupt."
            ) from None
    lowercase = None
    if vocabulary.is_file():
        lowercase = vocabulary_is_uncased(vocabulary)
    return Checkpoint(
        source=str(folder),
        format="google",
        backbone_config=config,
        tokenizer_config={"lowercase": True if lowercase is None else lowercase,
                          "strip_accents": None, "tokenize_chinese_chars": True},
        vocabulary_path=vocabulary if vocabulary.is_file() else None,
        state_dict=state_dict,
    )


def vocabulary_is_uncased(path):
    """Google checkpoints do not record casing; an uncased vocabulary has no capital letters."""
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        token = line.strip()
        if token.startswith("[") and token.endswith("]"):
            continue
        if token != token.lower():
            return False
    return True


def write_google_folder(folder, backbone_config, state_dict, vocabulary):
    """Write `bert_config.json`, `bert_model.ckpt.{index,data-*}` and `vocab.txt` in Google's names."""
    import tensorflow as tf

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    google_config = {
        "vocab_size": backbone_config["vocabulary_size"],
        "hidden_size": backbone_config["hidden_dim"],
        "num_hidden_layers": backbone_config["num_layers"],
        "num_attention_heads": backbone_config["num_heads"],
        "intermediate_size": backbone_config["intermediate_dim"],
        "hidden_act": "gelu",
        ACTIVATION_KEY: backbone_config["activation"],
        "hidden_dropout_prob": backbone_config["dropout"],
        "attention_probs_dropout_prob": backbone_config["attention_dropout"],
        "max_position_embeddings": backbone_config["max_sequence_length"],
        "type_vocab_size": backbone_config["num_segments"],
        "initializer_range": backbone_config["initializer_range"],
    }
    (folder / "bert_config.json").write_text(json.dumps(google_config, indent=2), encoding="utf-8")
    names, tensors = [], []
    for name, value in sorted(state_dict.items()):
        google_name, transpose = hf_to_google_name(name)
        names.append(google_name)
        tensors.append(tf.constant(value.T if transpose else value, dtype=tf.float32))
    tf.raw_ops.SaveV2(
        prefix=str(folder / "bert_model.ckpt"), tensor_names=names,
        shape_and_slices=[""] * len(names), tensors=tensors,
    )
    (folder / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    return folder
