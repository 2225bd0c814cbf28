"""BigBird against HF transformers (CPU torch).

Reference: HF `BigBirdModel` of a seeded, randomly initialised tiny config (hidden 32, 3 layers, 4 heads, inner
width 48, `block_size` 4, `num_random_blocks` 2: full attention up to (5 + 2 * 2) * 4 = 36 tokens, block-sparse
past it), its LayerNorms moved off their initial ones so that every weight matters, saved with
`save_pretrained` (no real BigBird weights can be downloaded here) beside a BigBird-style `spiece.model` trained
here; inputs are real UCI reviews packed by kerasbert's `BigBirdTokenizer` (a long pair cut, a short pair and a
short review right-padded). HF's model in eval mode picks no random
block (every random slot is block 0); neither does kerasbert in inference, so the outputs are comparable
position by position. Bar: max |difference| <= 1e-4 in float32 on sequence_output (every position, padding
included), pooled_output and every hidden state, at 36 tokens (full attention) and at 37 and 83 (block-sparse,
padded to blocks; rows padded too). Measured: 1.3e-6 on TensorFlow.
"""

import keras
import numpy as np
import pytest

import kerasbert
from kerasbert.data.shipped import load_dataset
from kerasbert.families import BigBirdBackbone, tokenizer_from_preset
from kerasbert.families.family import backbone_class_for
from kerasbert.layers.block_sparse_attention import BlockSparseSelfAttention, random_blocks
from kerasbert.presets.loading import load_checkpoint

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-4
TINY = {"vocab_size": 3000, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 3,
        "num_attention_heads": 4, "max_position_embeddings": 128, "block_size": 4, "num_random_blocks": 2}
# HF BigBirdModel of google/bigbird-roberta-base's config (HF's defaults): num_parameters()
BIG_BIRD_BASE_PARAMETERS = 127_468_800


@pytest.fixture(scope="module")
def big_bird_folder(tmp_path_factory, tokenizer_assets):
    """(HF folder with a BigBird-style `spiece.model` trained here, HF model in eval mode), built once."""
    torch.manual_seed(0)
    model = transformers.BigBirdModel(transformers.BigBirdConfig(**TINY)).eval()
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "LayerNorm" in name:
                weight.add_(torch.randn_like(weight) * 0.1)
    folder = tmp_path_factory.mktemp("big_bird")
    model.save_pretrained(str(folder))
    tokenizer_assets.train_big_bird_spiece(folder)
    return folder, model


def padded_batch(folder, length):
    """Real UCI reviews packed by `folder`'s `BigBirdTokenizer` to `length` tokens: a pair of long texts (cut, two
    segments), a pair that ends in padding, one short review (half or more padding)."""
    reviews = load_dataset("uci_sentiment", "test")["text"].tolist()[:40]
    short = sorted(reviews, key=len)[:3]
    firsts, seconds = [" ".join(reviews[:8]), short[0], short[1]], [" ".join(reviews[10:18]), short[2]]
    preprocessor = kerasbert.BertPreprocessor(tokenizer_from_preset(str(folder)), sequence_length=length)
    parts = [preprocessor((firsts[:2], seconds)), preprocessor(firsts[2:])]
    inputs = {key: np.concatenate([keras.ops.convert_to_numpy(part[key]) for part in parts]).astype("int32")
              for key in parts[0]}
    real = inputs["padding_mask"].sum(axis=1)
    assert real[0] == length > real[1] and real[2] <= length // 2 and inputs["segment_ids"][0].max() == 1
    return inputs


def hf_outputs(folder, inputs):
    """HF outputs from a fresh model (HF's `BigBirdModel` stays `original_full` once a short input switched it)."""
    model = transformers.BigBirdModel.from_pretrained(str(folder)).eval()
    with torch.no_grad():
        return model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                     token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long), output_hidden_states=True)


def worst_difference(ours, theirs):
    """Max |difference| over sequence_output, pooled_output and every hidden state, every position (HF's hidden
    states keep the padding up to a multiple of `block_size`: left out)."""
    pairs = [(ours["sequence_output"], theirs.last_hidden_state), (ours["pooled_output"], theirs.pooler_output)]
    assert len(ours["hidden_states"]) == len(theirs.hidden_states)
    pairs += list(zip(ours["hidden_states"], theirs.hidden_states))
    return max(float(np.abs(keras.ops.convert_to_numpy(a) - b.numpy()[:, :a.shape[1]]).max()) for a, b in pairs)


@pytest.mark.all_backends
@pytest.mark.parametrize("length", [36, 37, 83])
def test_matches_hf_big_bird_full_and_block_sparse(big_bird_folder, length):
    folder, _ = big_bird_folder
    checkpoint = load_checkpoint(folder)
    assert backbone_class_for(checkpoint) is BigBirdBackbone
    backbone = BigBirdBackbone.from_checkpoint(checkpoint, output_hidden_states=True)
    inputs = padded_batch(folder, length)
    difference = worst_difference(backbone(inputs), hf_outputs(folder, inputs))
    print(f"BigBird at {length} tokens vs transformers: max |diff| {difference:.1e}")
    assert difference <= TOLERANCE


def test_block_sparse_reads_otherwise_than_full_attention(big_bird_folder):
    folder, _ = big_bird_folder
    inputs = padded_batch(folder, 83)
    sparse, full = (keras.ops.convert_to_numpy(BigBirdBackbone.from_preset(str(folder), attention_type=kind)(inputs)
                                               ["sequence_output"]) for kind in ("block_sparse", "original_full"))
    assert np.abs(sparse - full).max() > 1e-3
    hf_full = transformers.BigBirdModel.from_pretrained(str(folder), attention_type="original_full").eval()
    with torch.no_grad():
        theirs = hf_full(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                         token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
                         attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long)).last_hidden_state
    assert np.abs(full - theirs.numpy()).max() <= TOLERANCE


def test_predict_on_any_length_equals_the_call(big_bird_folder):
    """`predict` traces a graph (TensorFlow: the length unknown, full or block-sparse decided in the graph)."""
    folder, _ = big_bird_folder
    backbone = BigBirdBackbone.from_preset(str(folder))
    for length in (30, 83):
        inputs = padded_batch(folder, length)
        predicted = backbone.predict(inputs, verbose=0)["sequence_output"]
        np.testing.assert_allclose(predicted, keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"]),
                                   atol=1e-5)


def test_training_draws_random_blocks_outside_the_window_and_the_global_blocks():
    seed = keras.random.SeedGenerator(0)
    first, second = (keras.ops.convert_to_numpy(random_blocks(12, 4, 3, seed)) for _ in range(2))
    assert first.shape == (4, 10, 3) and not np.array_equal(first, second)  # fresh blocks every step
    rows = np.arange(1, 11)[None, :, None]
    assert ((first > 0) & (first < 11) & (np.abs(first - rows) > 1)).all()
    assert all(len(set(row)) == 3 for row in first.reshape(-1, 3))
    attention = BlockSparseSelfAttention(num_heads=2, attention_dropout=0.0, block_size=2, num_random_blocks=1)
    x = keras.random.normal((1, 24, 8), seed=1)
    trained, inferred = (keras.ops.convert_to_numpy(attention(x, training=flag)) for flag in (True, False))
    assert np.abs(trained - inferred).max() > 1e-4  # random blocks in training, block 0 in inference


def test_parameter_count_equals_hf_big_bird_roberta_base():
    with torch.device("meta"):  # no memory, no initialisation: only the shapes
        reference = transformers.BigBirdModel(transformers.BigBirdConfig()).num_parameters()
    assert reference == BIG_BIRD_BASE_PARAMETERS
    assert BigBirdBackbone().count_params() == BIG_BIRD_BASE_PARAMETERS


def test_keras_file_and_hf_export_give_the_outputs_again(big_bird_folder, tmp_path):
    folder, _ = big_bird_folder
    backbone = BigBirdBackbone.from_preset(str(folder))
    path = tmp_path / "big_bird.keras"
    backbone.save(path)
    reloaded = keras.saving.load_model(path)
    assert type(reloaded) is BigBirdBackbone and reloaded.block_size == TINY["block_size"]
    inputs = padded_batch(folder, 83)
    expected, got = backbone(inputs), reloaded(inputs)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(got[key]), keras.ops.convert_to_numpy(expected[key]))
    exported, loading = transformers.AutoModel.from_pretrained(str(backbone.export_to_hf(tmp_path / "hf")),
                                                               output_loading_info=True)
    assert type(exported) is transformers.BigBirdModel
    assert not loading["missing_keys"] and not loading["unexpected_keys"]
    assert (exported.config.block_size, exported.config.num_random_blocks) == (4, 2)
    np.testing.assert_array_equal(hf_outputs(tmp_path / "hf", inputs).last_hidden_state.numpy(),
                                  hf_outputs(folder, inputs).last_hidden_state.numpy())


def test_bad_settings_are_named_errors():
    with pytest.raises(ValueError, match="block_size=0"):
        BigBirdBackbone(num_layers=1, hidden_dim=8, num_heads=2, intermediate_dim=8, block_size=0)
    with pytest.raises(ValueError, match="attention_type='sparse'"):
        BigBirdBackbone(num_layers=1, hidden_dim=8, num_heads=2, intermediate_dim=8, attention_type="sparse")
    with pytest.raises(ValueError, match="original_full"):
        BigBirdBackbone(num_layers=1, hidden_dim=8, num_heads=2, intermediate_dim=8, output_attentions=True)

