"""Reformer against HF transformers (CPU torch).

Reference: HF `ReformerModel` (eval mode, float32) of a seeded, randomly initialised config of the real layout
(hidden 64, two heads of 32, layers local / LSH / local / LSH, 2 hash rounds into factorised buckets [4, 4], LSH
chunks of 8 seeing one chunk either side, local chunks of 16 seeing the one before, axial positions on an 8 x 16
grid), its LayerNorms moved off their initial ones, saved with `save_pretrained` (no Reformer weights can be
downloaded here). Text: real sentences as bytes + 2 (the ids of google/reformer-enwik8), right-padded to 128.

The LSH rotations are random: HF with `hash_seed` draws them as `torch.manual_seed(hash_seed);
torch.randn([heads, head_dim, hashes, sum(buckets) // 2])` in every LSH layer, so the test gives each kerasbert
LSH layer that draw as its `rotations`. Bar: max |difference| <= 1e-4 on `sequence_output` and every hidden state
at real positions (measured on TensorFlow: 7.2e-7 on `sequence_output`, at most 4.8e-7 on the hidden states).
"""

import keras
import numpy as np
import pytest

from kerasbert.families import ModernBertBackbone, ReformerBackbone
from kerasbert.families.family import backbone_class_for
from kerasbert.layers.lsh_self_attention import LshSelfAttention, rotation_size
from kerasbert.presets.loading import load_checkpoint

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-4
HASH_SEED = 7
TINY = {"vocab_size": 258, "hidden_size": 64, "num_attention_heads": 2, "attention_head_size": 32,
        "feed_forward_size": 128, "attn_layers": ["local", "lsh", "local", "lsh"], "num_hashes": 2,
        "num_buckets": [4, 4], "lsh_attn_chunk_length": 8, "lsh_num_chunks_before": 1, "lsh_num_chunks_after": 1,
        "local_attn_chunk_length": 16, "local_num_chunks_before": 1, "local_num_chunks_after": 0,
        "axial_pos_shape": [8, 16], "axial_pos_embds_dim": [16, 48], "max_position_embeddings": 128,
        "hash_seed": HASH_SEED, "hidden_act": "gelu", "pad_token_id": 0, "is_decoder": False}


@pytest.fixture(scope="module")
def reformer_folder(tmp_path_factory):
    """(HF folder, HF model in eval mode), built once."""
    torch.manual_seed(0)
    model = transformers.ReformerModel(transformers.ReformerConfig(**TINY)).eval()
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "norm" in name:
                weight.add_(torch.randn_like(weight) * 0.1)
    folder = tmp_path_factory.mktemp("reformer")
    model.save_pretrained(str(folder))
    return folder, model


def byte_batch(texts, length):
    """Token ids (UTF-8 bytes + 2, as enwik8's Reformer) and padding mask, right-padded with 0 to `length`."""
    token_ids = np.zeros((len(texts), length), "int32")
    for row, text in enumerate(texts):
        ids = np.frombuffer(text.encode("utf-8"), np.uint8)[:length].astype("int32") + 2
        token_ids[row, :len(ids)] = ids
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
            "padding_mask": (token_ids > 0).astype("int32")}


def varied(sentences, count=4):
    """`count` real sentences from the shortest to the longest (some padded, one filling the batch)."""
    ordered = sorted(sentences, key=len)
    return [ordered[round(i * (len(ordered) - 1) / (count - 1))] for i in range(count)]


def hf_rotations(config=TINY):
    """HF's rotations under `hash_seed` (`LSHSelfAttention._hash_vectors`)."""
    torch.manual_seed(config["hash_seed"])
    shape = (config["num_attention_heads"], config["attention_head_size"], config["num_hashes"],
             rotation_size(config["num_buckets"])[0] // 2)
    return torch.randn(shape).numpy()


def with_hf_rotations(backbone):
    for block in backbone.encoder_blocks:
        if isinstance(block.attention, LshSelfAttention):
            block.attention.rotations = hf_rotations()
    return backbone


def hf_forward(model, inputs):
    with torch.no_grad():
        return model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long), output_hidden_states=True)


def max_diff(ours, theirs, mask):
    length = mask.shape[1]
    return float(np.max(np.abs(keras.ops.convert_to_numpy(ours) - theirs.numpy()[:, :length]) * mask[..., None]))


def test_matches_hf_reformer_on_padded_real_text(reformer_folder, real_sentences):
    folder, model = reformer_folder
    checkpoint = load_checkpoint(folder)
    assert backbone_class_for(checkpoint) is ReformerBackbone
    backbone = with_hf_rotations(ReformerBackbone.from_checkpoint(checkpoint, output_hidden_states=True))
    inputs = byte_batch(varied(real_sentences), 128)  # 16 LSH chunks a round, 8 local
    assert inputs["padding_mask"].sum(axis=1).tolist() == [2, 90, 128, 128]
    theirs, ours = hf_forward(model, inputs), backbone(inputs)
    mask = inputs["padding_mask"]
    diffs = [max_diff(ours["sequence_output"], theirs.last_hidden_state, mask)]
    assert len(ours["hidden_states"]) == len(theirs.hidden_states) == 5
    diffs += [max_diff(a, b, mask) for a, b in zip(ours["hidden_states"], theirs.hidden_states)]
    assert max(diffs) <= TOLERANCE, diffs
    # the rotations matter: kerasbert's own draw under the same seed buckets otherwise
    own_draw = ReformerBackbone.from_checkpoint(checkpoint)(inputs)["sequence_output"]
    assert max_diff(own_draw, theirs.last_hidden_state, mask) > 1e-3


@pytest.mark.parametrize("length", [45, 6])
def test_pads_to_the_chunk_lengths_and_attends_fully_within_one_chunk_as_hf(reformer_folder, real_sentences, length):
    # 45: HF pads to 48 (the lcm of 8 and 16) and cuts back; 6: shorter than every chunk, plain attention
    folder, model = reformer_folder
    backbone = with_hf_rotations(ReformerBackbone.from_preset(str(folder)))
    inputs = byte_batch(varied(real_sentences, 3), length)
    ours = backbone(inputs)["sequence_output"]
    assert ours.shape[1] == length
    assert max_diff(ours, hf_forward(model, inputs).last_hidden_state, inputs["padding_mask"]) <= TOLERANCE


def test_padded_tokens_are_never_attended(reformer_folder, real_sentences):
    backbone = with_hf_rotations(ReformerBackbone.from_preset(str(reformer_folder[0])))
    inputs = byte_batch(varied(real_sentences), 64)
    other = {**inputs, "token_ids": np.where(inputs["padding_mask"] > 0, inputs["token_ids"], 77)}
    mask = inputs["padding_mask"][..., None]
    first, second = (keras.ops.convert_to_numpy(backbone(x)["sequence_output"]) for x in (inputs, other))
    np.testing.assert_allclose(first * mask, second * mask, atol=1e-6)


def test_hash_seed_fixes_the_draw_and_no_seed_draws_afresh(reformer_folder, real_sentences):
    inputs = byte_batch(varied(real_sentences, 2), 64)
    seeded = ReformerBackbone.from_preset(str(reformer_folder[0]))
    fresh = ReformerBackbone.from_preset(str(reformer_folder[0]), hash_seed=None)
    np.testing.assert_array_equal(*(keras.ops.convert_to_numpy(seeded(inputs)["sequence_output"]) for _ in "ab"))
    first, second = (keras.ops.convert_to_numpy(fresh(inputs)["sequence_output"]) for _ in "ab")
    assert np.max(np.abs(first - second)) > 1e-4


def test_keras_file_and_hf_export_give_the_outputs_again(reformer_folder, real_sentences, tmp_path):
    folder, model = reformer_folder
    backbone = ReformerBackbone.from_preset(str(folder))  # hash_seed 7: kerasbert's draw, the same every call
    inputs = byte_batch(varied(real_sentences, 3), 64)
    backbone.save(tmp_path / "reformer.keras")
    reloaded = keras.saving.load_model(tmp_path / "reformer.keras")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(reloaded(inputs)["sequence_output"]),
                                  keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"]))
    exported, loading = transformers.AutoModel.from_pretrained(str(backbone.export_to_hf(tmp_path / "hf")),
                                                               output_loading_info=True)
    assert type(exported) is transformers.ReformerModel
    assert not loading["missing_keys"] and not loading["unexpected_keys"]
    np.testing.assert_array_equal(hf_forward(exported.eval(), inputs).last_hidden_state.numpy(),
                                  hf_forward(model, inputs).last_hidden_state.numpy())


def test_ordinary_positions_and_chunked_feed_forward_match_hf(tmp_path, real_sentences):
    config = {**TINY, "axial_pos_embds": False, "attn_layers": ["lsh", "lsh"], "num_buckets": 8, "num_hashes": 1,
              "chunk_size_feed_forward": 16}
    torch.manual_seed(1)
    model = transformers.ReformerModel(transformers.ReformerConfig(**config)).eval()
    model.save_pretrained(str(tmp_path))
    backbone = ReformerBackbone.from_preset(str(tmp_path))
    assert backbone.feed_forward_chunk_size == 16 and not backbone.axial_position_embeddings
    for block in backbone.encoder_blocks:
        block.attention.rotations = hf_rotations(config)
    inputs = byte_batch(varied(real_sentences, 2), 32)
    ours = backbone(inputs)["sequence_output"]
    assert max_diff(ours, hf_forward(model, inputs).last_hidden_state, inputs["padding_mask"]) <= TOLERANCE


def small_backbone(**overrides):
    return ReformerBackbone(**{**dict(vocabulary_size=258, hidden_dim=32, num_heads=2, head_dim=16,
                                      intermediate_dim=32, attn_layers=["local", "lsh"], num_buckets=4,
                                      lsh_chunk_length=8, local_chunk_length=8, axial_position_shape=(4, 8),
                                      axial_position_dims=(8, 24), max_sequence_length=32, hash_seed=0),
                               **overrides})


def test_builds_after_a_functional_family_backbone_in_the_same_process():
    # Keras turns the bases of a class built as a functional model into Functional: a shared keras.Model base of
    # ModernBERT's and Reformer's would have broken every later ReformerBackbone (seen under pytest-xdist)
    ModernBertBackbone(vocabulary_size=16, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=8)
    assert small_backbone().count_params() > 0


def test_one_training_step_with_remat_moves_every_weight(real_sentences):
    backbone = small_backbone(remat=True)
    data = byte_batch(varied(real_sentences), 32)
    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in data}
    model = keras.Model(inputs, backbone(inputs)["sequence_output"])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mean_squared_error", run_eagerly=True)
    before = [keras.ops.convert_to_numpy(w) for w in backbone.trainable_weights]
    history = model.fit(data, np.zeros((4, 32, 64), "float32"), batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert all(not np.array_equal(b, keras.ops.convert_to_numpy(w)) for b, w in zip(before, backbone.trainable_weights))


@pytest.mark.all_backends
def test_inverted_blocks_train_as_the_stored_backward_does(real_sentences):
    # two fit steps (traced: tf.function, jax.jit, torch) with and without inverting the blocks in the backward pass
    data = byte_batch(varied(real_sentences, 3), 32)
    target = np.random.default_rng(0).normal(size=(3, 32, 64)).astype("float32")
    trained = []
    for invert_blocks in (False, True):
        keras.utils.set_random_seed(0)
        backbone = small_backbone(invert_blocks=invert_blocks, dropout=0.0, local_attention_dropout=0.0)
        inputs = {name: keras.Input((32,), dtype="int32", name=name) for name in data}
        model = keras.Model(inputs, backbone(inputs)["sequence_output"])
        model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mean_squared_error")
        before = [keras.ops.convert_to_numpy(w) for w in backbone.trainable_weights]
        model.fit(data, target, batch_size=3, epochs=2, verbose=0)
        trained.append([keras.ops.convert_to_numpy(w) for w in backbone.trainable_weights])
        assert all(not np.array_equal(b, w) for b, w in zip(before, trained[-1]))
    assert max(float(np.max(np.abs(a - b))) for a, b in zip(*trained)) <= 1e-5


def test_inverted_backward_gives_hf_reformers_gradients(real_sentences, tmp_path):
    # HF's training mode inverts the blocks (`_ReversibleFunction`); dropout off, LSH rotations HF's draw. Measured:
    # 3.1e-5 at most, on gradients up to 53
    import tensorflow as tf

    config = {**TINY, "hidden_dropout_prob": 0.0, "lsh_attention_probs_dropout_prob": 0.0,
              "local_attention_probs_dropout_prob": 0.0}
    torch.manual_seed(2)
    model = transformers.ReformerModel(transformers.ReformerConfig(**config))
    model.save_pretrained(str(tmp_path / "initial"))
    inputs = byte_batch(varied(real_sentences), 128)  # HF trains only on the axial grid's length
    weights = np.random.default_rng(0).normal(size=(4, 128, 128)).astype("float32") * inputs["padding_mask"][..., None]
    model.train()
    output = model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                   attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long)).last_hidden_state
    (output * torch.tensor(weights)).sum().backward()
    backbone = with_hf_rotations(ReformerBackbone.from_preset(str(tmp_path / "initial"), invert_blocks=True))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(backbone(inputs, training=True)["sequence_output"] * weights)
    for variable, grad in zip(backbone.trainable_variables, tape.gradient(loss, backbone.trainable_variables)):
        variable.assign_sub(grad)  # one SGD step at rate 1: the exported weights carry the gradients
    stepped = transformers.AutoModel.from_pretrained(str(backbone.export_to_hf(tmp_path / "stepped")))
    stepped_weights = dict(stepped.named_parameters())
    differences = {name: float((weight - stepped_weights[name] - weight.grad).abs().max().detach())
                   for name, weight in model.named_parameters() if weight.grad is not None}
    assert len(differences) == len(list(model.parameters()))
    assert max(differences.values()) <= TOLERANCE, differences


def test_inverted_blocks_refuse_random_draws_and_remat():
    with pytest.raises(ValueError, match="encoder_block_0: dropout 0.05.*set dropout"):
        small_backbone(invert_blocks=True)
    with pytest.raises(ValueError, match="LSH rotations drawn afresh.*give a hash_seed"):
        small_backbone(invert_blocks=True, dropout=0.0, local_attention_dropout=0.0, hash_seed=None)
    with pytest.raises(ValueError, match="choose one"):
        small_backbone(invert_blocks=True, remat=True, dropout=0.0, local_attention_dropout=0.0)


def test_a_graph_of_unknown_length_computes_what_eager_calls_do(real_sentences):
    # only TensorFlow traces with an unknown length (JAX and torch see every shape): ops.cond then picks chunked or
    # plain attention, and the padding to the chunk lengths is computed in the graph
    if keras.backend.backend() != "tensorflow":
        pytest.skip("a graph of unknown length is TensorFlow's")
    import tensorflow as tf

    backbone = small_backbone()
    spec = {name: tf.TensorSpec((None, None), tf.int32) for name in ("token_ids", "segment_ids", "padding_mask")}
    graph = tf.function(lambda inputs: backbone(inputs)["sequence_output"], input_signature=[spec])
    for length in (30, 6):  # padded to 32 and chunked; one chunk, plain
        data = byte_batch(varied(real_sentences), length)
        np.testing.assert_allclose(graph(data).numpy(), keras.ops.convert_to_numpy(backbone(data)["sequence_output"]),
                                   atol=1e-5)


def test_bad_settings_are_named_errors():
    with pytest.raises(ValueError, match="attn_layers.*'lsh' or 'local'"):
        ReformerBackbone(attn_layers=["lsh", "global"])
    with pytest.raises(ValueError, match="num_buckets=5.*even"):
        LshSelfAttention(num_heads=2, head_dim=4, chunk_length=4, num_buckets=5)
    with pytest.raises(ValueError, match="multiple of chunk_length=4.*pad it to 8"):
        LshSelfAttention(num_heads=2, head_dim=4, chunk_length=4, num_buckets=4)(
            keras.ops.ones((1, 6, 8)), keras.ops.ones((1, 6), "bool"))
    with pytest.raises(ValueError, match="must sum to hidden_dim=256"):
        ReformerBackbone(axial_position_dims=(64, 64))
