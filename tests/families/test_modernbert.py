"""ModernBERT against HF transformers (CPU torch).

Reference: HF `ModernBertModel` (eager attention) of a seeded, randomly initialised tiny config (hidden 32,
3 layers: one global and two local with `local_attention` 4, so that on 12 tokens the window cuts; 4 heads,
GeGLU inner width 48), its norms moved off their initial ones so that every weight matters, saved with
`save_pretrained` (no real ModernBERT weights can be downloaded here). Bar: max |difference| <= 1e-5 in
float32 on sequence_output and every hidden state at real positions of a right-padded batch.
"""

import numpy as np
import pytest

from kerasbert.families import ModernBertBackbone
from kerasbert.families.family import backbone_class_for
from kerasbert.presets.loading import load_checkpoint

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-5
TINY = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 3,
        "num_attention_heads": 4, "local_attention": 4, "global_attn_every_n_layers": 3,
        "max_position_embeddings": 64, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
        "cls_token_id": 1, "sep_token_id": 2}
LENGTHS = (12, 9, 5)  # a right-padded batch: the window (2 either side) cuts the 12 and the 9 tokens


@pytest.fixture(scope="module")
def modernbert_folder(tmp_path_factory):
    """(HF folder, HF model in eval mode with eager attention), built once."""
    torch.manual_seed(0)
    model = transformers.ModernBertModel(transformers.ModernBertConfig(**TINY)).eval()
    model.set_attn_implementation("eager")
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "norm" in name:
                weight.add_(torch.randn_like(weight) * 0.1)
    folder = tmp_path_factory.mktemp("modernbert")
    model.save_pretrained(str(folder))
    return folder, model


def padded_batch():
    """Token ids and padding mask of three sequences of `LENGTHS`, right-padded with id 0."""
    rng = np.random.default_rng(0)
    token_ids = np.zeros((len(LENGTHS), max(LENGTHS)), "int32")
    padding_mask = np.zeros_like(token_ids)
    for row, length in enumerate(LENGTHS):
        token_ids[row, :length] = rng.integers(3, TINY["vocab_size"], length)
        padding_mask[row, :length] = 1
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": padding_mask}


def max_diff(ours, theirs, mask):
    return float(np.max(np.abs(np.asarray(ours) - theirs.numpy()) * mask[..., None]))


def test_matches_hf_modernbert_on_a_padded_batch_with_the_window_cutting(modernbert_folder):
    folder, model = modernbert_folder
    checkpoint = load_checkpoint(folder)
    assert backbone_class_for(checkpoint) is ModernBertBackbone
    backbone = ModernBertBackbone.from_checkpoint(checkpoint, output_hidden_states=True)
    inputs = padded_batch()
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                       attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long),
                       output_hidden_states=True)
    ours = backbone(inputs)
    mask = inputs["padding_mask"]
    diffs = [max_diff(ours["sequence_output"], theirs.last_hidden_state, mask)]
    assert len(ours["hidden_states"]) == len(theirs.hidden_states)
    diffs += [max_diff(a, b, mask) for a, b in zip(ours["hidden_states"], theirs.hidden_states)]
    print(diffs)
    assert max(diffs) <= TOLERANCE, diffs
