"""Broken checkpoints fail early with an error naming the file and the mismatch."""

import json

import pytest

from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.presets.checkpoint import CheckpointError


@pytest.fixture
def minilm_copy(minilm_path, tmp_path):
    """A folder of symlinks to the real checkpoint; tests replace the file they break."""
    folder = tmp_path / "minilm"
    folder.mkdir()
    for path in minilm_path.iterdir():
        if path.is_file():
            (folder / path.name).symlink_to(path)
    return folder


def replace(folder, name, content):
    (folder / name).unlink()
    mode = "wb" if isinstance(content, bytes) else "w"
    with open(folder / name, mode) as f:
        f.write(content)


def test_truncated_safetensors(minilm_copy, minilm_path):
    data = (minilm_path / "model.safetensors").read_bytes()
    replace(minilm_copy, "model.safetensors", data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"model\.safetensors cannot be read.*truncated or corrupt"):
        BertBackbone.from_preset(str(minilm_copy))


def test_garbage_safetensors(minilm_copy):
    replace(minilm_copy, "model.safetensors", b"not a safetensors file at all")
    with pytest.raises(CheckpointError, match="model.safetensors"):
        BertBackbone.from_preset(str(minilm_copy))


def test_config_that_does_not_match_the_weights(minilm_copy, minilm_path):
    config = json.loads((minilm_path / "config.json").read_text())
    replace(minilm_copy, "config.json", json.dumps({**config, "intermediate_size": 1024}))
    with pytest.raises(ValueError, match=r"intermediate\.dense\.weight has shape \(1536, 384\).*\(384, 1024\)"):
        BertBackbone.from_preset(str(minilm_copy))
    replace(minilm_copy, "config.json", json.dumps({**config, "num_hidden_layers": 8}))
    with pytest.raises(ValueError, match=r"lacks .*encoder\.layer\.6"):
        BertBackbone.from_preset(str(minilm_copy))


def test_corrupt_config_json(minilm_copy):
    replace(minilm_copy, "config.json", '{"hidden_size": 384,')
    with pytest.raises(CheckpointError, match=r"config\.json is not valid JSON"):
        BertBackbone.from_preset(str(minilm_copy))


def test_missing_vocabulary(minilm_copy):
    expected = BertTokenizer.from_preset(str(minilm_copy)).get_vocabulary()
    (minilm_copy / "vocab.txt").unlink()  # transformers 5 saves the WordPiece model in tokenizer.json alone
    assert BertTokenizer.from_preset(str(minilm_copy)).get_vocabulary() == expected
    (minilm_copy / "tokenizer.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"No vocab\.txt in .*minilm"):
        BertTokenizer.from_preset(str(minilm_copy))


def test_folder_that_is_not_a_checkpoint(tmp_path):
    with pytest.raises(CheckpointError, match="not a BERT checkpoint"):
        BertBackbone.from_preset(str(tmp_path))


def test_corrupt_kerasbert_weights(tmp_path, tiny_config):
    folder = BertBackbone(**tiny_config).save_to_preset(tmp_path / "preset")
    (folder / "model.weights.h5").write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError, match=r"model\.weights\.h5 does not load"):
        BertBackbone.from_preset(str(folder))


def test_truncated_google_checkpoint(minilm_path, tmp_path):
    from kerasbert.presets.google_format import write_google_folder
    from kerasbert.presets.loading import load_checkpoint

    checkpoint = load_checkpoint(str(minilm_path))
    folder = write_google_folder(tmp_path / "google", checkpoint.backbone_config,
                                 checkpoint.state_dict, ["[PAD]"])
    data_file = next(folder.glob("bert_model.ckpt.data-*"))
    data_file.write_bytes(data_file.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match=r"bert_model\.ckpt cannot be read"):
        BertBackbone.from_preset(str(folder))


def test_plain_google_config_means_tanh_gelu(tmp_path, tiny_config):
    """google-research/bert's `gelu` is the tanh approximation; an exact-GELU model records it."""
    from kerasbert.presets.google_format import read_google_folder

    (tmp_path / "bert_config.json").write_text(json.dumps({
        "vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 32, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 32,
        "type_vocab_size": 2, "initializer_range": 0.02,
    }))
    assert read_google_folder(tmp_path, load_weights=False).backbone_config["activation"] == "gelu_approximate"
