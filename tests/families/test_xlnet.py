"""XLNetBackbone and XLNetLMHead against HF transformers (CPU torch).

Reference: HF `XLNetLMHeadModel` (its `transformer`, an `XLNetModel`) of a seeded, randomly initialised tiny
config saved with `save_pretrained` (no real XLNet weights can be downloaded here), in eval mode. Bar: max
|difference| <= 1e-4 in float32 on every output (content stream, query-stream logits, memories), 1e-5 on the
weights after one SGD step.
"""

import json

import keras
import numpy as np
import pytest

from kerasbert.families.checkpoint_weights import export_links
from kerasbert.families.family import backbone_class_for
from kerasbert.families.xlnet.xlnet_backbone import XLNetBackbone
from kerasbert.families.xlnet.xlnet_weights import LM_HEAD_BIAS, backbone_links, load_lm_head
from kerasbert.layers.xlnet_lm_head import XLNetLMHead
from kerasbert.presets.checkpoint import CheckpointError
from kerasbert.presets.loading import load_checkpoint

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-4
PAD, PAD_SEGMENT, CLS_SEGMENT = 5, 3, 2  # XLNet's <pad> id, pad token type and <cls> segment
MEMORY_LENGTH = 7


@pytest.fixture(scope="module")
def hf_xlnet(tmp_path_factory):
    """`(XLNetLMHeadModel in eval mode, its folder)`: a seeded tiny XLNet without dropout, mem_len 7."""
    torch.manual_seed(0)
    config = transformers.XLNetConfig(vocab_size=100, d_model=32, n_head=4, d_inner=64, n_layer=2, dropout=0.0,
                                      mem_len=MEMORY_LENGTH)
    model = transformers.XLNetLMHeadModel(config).eval()
    with torch.no_grad():  # HF starts LayerNorms at 1 and 0 and lm_loss.bias at 0: make them tell apart
        for name, parameter in model.named_parameters():
            if "layer_norm" in name or name == LM_HEAD_BIAS:
                parameter.add_(torch.randn_like(parameter) * 0.1)
    folder = tmp_path_factory.mktemp("xlnet")
    model.save_pretrained(folder)
    return model, folder


def left_padded_batch(length=9, lengths=(9, 6, 2), seed=0):
    """Rows of `lengths` real tokens padded on the left (as HF's XLNet tokenizer pads), segments 0, 1 and 2 for
    the last (`<cls>`) token, padding in token type 3."""
    padding_mask = (np.arange(length)[None, :] >= length - np.array(lengths)[:, None]).astype("int32")
    token_ids = np.random.default_rng(seed).integers(6, 100, size=padding_mask.shape)
    segment_ids = np.where(np.arange(length) < length - 4, 0, 1)[None, :].repeat(len(lengths), 0)
    segment_ids[:, -1] = CLS_SEGMENT
    return {"token_ids": np.where(padding_mask == 1, token_ids, PAD).astype("int32"),
            "segment_ids": np.where(padding_mask == 1, segment_ids, PAD_SEGMENT).astype("int32"),
            "padding_mask": padding_mask}


def hf_arguments(inputs):
    return {"input_ids": torch.tensor(inputs["token_ids"], dtype=torch.long),
            "token_type_ids": torch.tensor(inputs["segment_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(inputs["padding_mask"], dtype=torch.float32)}


def permutation_inputs(inputs, num_predict=2, seed=1):
    """`(perm_mask [B, T, T], target_mapping [B, P, T])` of a random factorisation order per row whose last
    `num_predict` real positions are predicted (as XLNet's pre-training data: the others are seen by all)."""
    rng = np.random.default_rng(seed)
    batch, length = inputs["token_ids"].shape
    perm_mask = np.zeros((batch, length, length), "float32")
    target_mapping = np.zeros((batch, num_predict, length), "float32")
    for row in range(batch):
        real = np.flatnonzero(inputs["padding_mask"][row])
        targets = rng.choice(real, size=num_predict, replace=False)
        order = np.full(length, -1)
        order[targets] = rng.permutation(num_predict)
        # position i cannot see target j unless j comes before i in the order (non-targets see no target)
        perm_mask[row][:, targets] = (order[targets][None, :] >= np.where(order >= 0, order, -1)[:, None])
        target_mapping[row, np.arange(num_predict), targets] = 1.0
    return perm_mask, target_mapping


def numpy_tree(outputs):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, outputs)


def max_difference(ours, theirs):
    return float(np.abs(np.asarray(ours) - np.asarray(theirs)).max())


def test_an_hf_folder_loads_through_the_family_registry(hf_xlnet):
    _, folder = hf_xlnet
    checkpoint = load_checkpoint(folder)
    assert checkpoint.family == "xlnet" and backbone_class_for(checkpoint) is XLNetBackbone
    backbone = XLNetBackbone.from_checkpoint(checkpoint)
    assert backbone.memory_length == MEMORY_LENGTH and backbone.hidden_dim == 32 and backbone.num_layers == 2
    hf_count = sum(parameter.numel() for name, parameter in hf_xlnet[0].transformer.named_parameters())
    assert backbone.count_params() == hf_count + 32 * 32 + 32  # and the summary (HF's is in the task model)


def test_a_pickled_checkpoint_loads_only_when_allowed(hf_xlnet, tmp_path):
    model, folder = hf_xlnet
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())
    with pytest.raises(CheckpointError, match="allow_pickle=True"):
        XLNetBackbone.from_preset(tmp_path)
    inputs = left_padded_batch()
    ours = numpy_tree(XLNetBackbone.from_preset(tmp_path, allow_pickle=True)(inputs))
    expected = numpy_tree(XLNetBackbone.from_preset(folder)(inputs))
    del ours["pooled_output"], expected["pooled_output"]  # the summary: random, as HF starts it, without a classifier
    assert all(np.array_equal(a, b) for a, b in zip(keras.tree.flatten(ours), keras.tree.flatten(expected)))


@pytest.mark.all_backends
def test_content_stream_matches_hf_on_a_left_padded_batch(hf_xlnet):
    model, folder = hf_xlnet
    inputs = left_padded_batch()
    ours = numpy_tree(XLNetBackbone.from_preset(folder, memory_length=None)(inputs))
    with torch.no_grad():
        theirs = model.transformer(**hf_arguments(inputs))
    assert set(ours) == {"sequence_output", "pooled_output"}
    difference = max_difference(ours["sequence_output"], theirs.last_hidden_state)
    print(f"content stream, left-padded batch: max |difference| {difference:.2e}")
    assert difference <= TOLERANCE


@pytest.mark.all_backends
def test_two_segments_with_memory_match_hf_mems(hf_xlnet):
    model, folder = hf_xlnet
    backbone = XLNetBackbone.from_preset(folder)
    first, second = left_padded_batch(5, (5, 3), seed=2), left_padded_batch(5, (5, 5), seed=3)
    ours_first = numpy_tree(backbone(first))
    ours_second = numpy_tree(backbone({**second, "memory": ours_first["new_memory"]}))
    with torch.no_grad():
        theirs_first = model.transformer(**hf_arguments(first), use_mems=True)
        theirs_second = model.transformer(**hf_arguments(second), mems=theirs_first.mems, use_mems=True)
    differences = []
    for ours, theirs in ((ours_first, theirs_first), (ours_second, theirs_second)):
        differences.append(max_difference(ours["sequence_output"], theirs.last_hidden_state))
        assert len(ours["new_memory"]) == len(theirs.mems) == 2
        for our_memory, their_memory in zip(ours["new_memory"], theirs.mems):  # HF: [M, batch, hidden]
            assert our_memory.shape == their_memory.permute(1, 0, 2).shape
            differences.append(max_difference(our_memory, their_memory.permute(1, 0, 2)))
    assert ours_second["new_memory"][0].shape == (2, MEMORY_LENGTH, 32)  # 5 + 5 states, the last 7 kept
    print(f"two segments with memory: max |difference| {max(differences):.2e}")
    assert max(differences) <= TOLERANCE


@pytest.mark.all_backends
def test_query_stream_logits_match_xlnet_lm_head_model(hf_xlnet):
    model, folder = hf_xlnet
    checkpoint = load_checkpoint(folder)
    backbone = XLNetBackbone.from_checkpoint(checkpoint, memory_length=None)
    head = XLNetLMHead(backbone.token_embedding)
    assert load_lm_head(head, checkpoint)
    inputs = left_padded_batch()
    perm_mask, target_mapping = permutation_inputs(inputs)
    outputs = backbone({**inputs, "perm_mask": perm_mask, "target_mapping": target_mapping})
    logits = keras.ops.convert_to_numpy(head(outputs["query_output"]))
    outputs = numpy_tree(outputs)
    with torch.no_grad():
        theirs = model(**hf_arguments(inputs), perm_mask=torch.tensor(perm_mask),
                       target_mapping=torch.tensor(target_mapping), output_hidden_states=True)
    assert logits.shape == tuple(theirs.logits.shape) == (3, 2, 100)
    logits_difference = max_difference(logits, theirs.logits)
    content_difference = max_difference(outputs["sequence_output"], theirs.hidden_states[-2])  # HF: (h, g) pairs
    print(f"query-stream logits: max |difference| {logits_difference:.2e}; content stream {content_difference:.2e}")
    assert logits_difference <= TOLERANCE and content_difference <= TOLERANCE


class PermutationLM(keras.Model):
    """The backbone's query stream through the tied LM head: `XLNetLMHeadModel`'s logits."""

    def __init__(self, backbone, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.head = XLNetLMHead(backbone.token_embedding)

    def call(self, inputs):
        return self.head(self.backbone(inputs)["query_output"])


@pytest.mark.all_backends
def test_one_sgd_step_updates_the_weights_as_torch(hf_xlnet, tmp_path):
    hf_model, folder = hf_xlnet
    torch_model = transformers.XLNetLMHeadModel.from_pretrained(folder).train()  # dropout is 0
    checkpoint = load_checkpoint(folder)
    model = PermutationLM(XLNetBackbone.from_checkpoint(checkpoint, memory_length=None))
    load_lm_head(model.head, checkpoint)
    inputs = left_padded_batch(seed=4)
    perm_mask, target_mapping = permutation_inputs(inputs, seed=5)
    labels = (inputs["token_ids"][:, None, :] * target_mapping).sum(-1).astype("int32")  # the predicted tokens
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.5),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    loss = model.train_on_batch({**inputs, "perm_mask": perm_mask, "target_mapping": target_mapping}, labels)

    optimizer = torch.optim.SGD(torch_model.parameters(), lr=0.5)
    torch_loss = torch_model(**hf_arguments(inputs), perm_mask=torch.tensor(perm_mask),
                             target_mapping=torch.tensor(target_mapping), labels=torch.tensor(labels).long()).loss
    torch_loss.backward()
    optimizer.step()
    theirs = {name.removeprefix("transformer."): parameter.detach().numpy()
              for name, parameter in torch_model.named_parameters()}
    ours = export_links(backbone_links(model.backbone))  # torch layout
    ours[LM_HEAD_BIAS] = keras.ops.convert_to_numpy(model.head.bias)
    assert set(ours) == set(theirs)
    moved = max(max_difference(theirs[name], hf_model.state_dict()[f"transformer.{name}"])
                for name in theirs if name != LM_HEAD_BIAS)
    difference = max(max_difference(ours[name], theirs[name]) for name in theirs)
    print(f"one SGD step: loss {float(loss):.6f} vs {torch_loss.item():.6f}; weights moved up to {moved:.2e}, "
          f"max |difference| {difference:.2e}")
    assert abs(float(loss) - torch_loss.item()) <= 1e-5 and moved > 1e-3 and difference <= 1e-5


@pytest.mark.all_backends
def test_a_saved_backbone_reloads_with_identical_outputs(hf_xlnet, tmp_path):
    backbone = XLNetBackbone.from_preset(hf_xlnet[1])
    inputs = left_padded_batch()
    perm_mask, target_mapping = permutation_inputs(inputs)
    first = backbone(inputs)
    second_inputs = {**inputs, "memory": first["new_memory"], "perm_mask": perm_mask,
                     "target_mapping": target_mapping}
    backbone.save(tmp_path / "xlnet.keras")
    reloaded = keras.saving.load_model(tmp_path / "xlnet.keras")
    assert isinstance(reloaded, XLNetBackbone) and reloaded.get_config() == backbone.get_config()
    for inputs_used in (inputs, second_inputs):
        ours, theirs = numpy_tree(backbone(inputs_used)), numpy_tree(reloaded(inputs_used))
        assert keras.tree.flatten(ours) and all(np.array_equal(a, b) for a, b in
                                                zip(keras.tree.flatten(ours), keras.tree.flatten(theirs)))


def test_bad_inputs_raise_errors_that_name_the_fix(hf_xlnet):
    backbone = XLNetBackbone.from_preset(hf_xlnet[1])
    inputs = left_padded_batch()
    perm_mask, target_mapping = permutation_inputs(inputs)
    memory = backbone(inputs)["new_memory"]
    with pytest.raises(ValueError, match="without target_mapping"):
        backbone({**inputs, "perm_mask": perm_mask})
    with pytest.raises(ValueError, match="without perm_mask"):
        backbone({**inputs, "target_mapping": target_mapping})
    with pytest.raises(ValueError, match=r"target_mapping has shape \(3, 2, 8\)"):
        backbone({**inputs, "perm_mask": perm_mask, "target_mapping": target_mapping[:, :, 1:]})
    with pytest.raises(ValueError, match="list of 2 tensors"):
        backbone({**inputs, "memory": memory[:1]})
    with pytest.raises(ValueError, match=r"memory\[1\] has shape \(3, 7, 16\)"):
        backbone({**inputs, "memory": [memory[0], memory[1][:, :, :16]]})
    with pytest.raises(ValueError, match="memory lengths differ"):
        backbone({**inputs, "memory": [memory[0], memory[1][:, 1:]]})
    with pytest.raises(ValueError, match="lack"):
        backbone({"token_ids": inputs["token_ids"]})
    with pytest.raises(ValueError, match="memory_length must be"):
        XLNetBackbone(100, 2, 4, 32, 64, memory_length=-1)


@pytest.mark.parametrize("setting", [{"attn_type": "uni"}, {"bi_data": True}, {"reuse_len": 4}])
def test_hf_settings_kerasbert_does_not_compute_are_refused(hf_xlnet, tmp_path, setting):
    config = json.loads((hf_xlnet[1] / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, **setting}))
    with pytest.raises(CheckpointError, match=f"{next(iter(setting))}=.* is not supported"):
        load_checkpoint(tmp_path, load_weights=False)
