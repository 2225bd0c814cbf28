"""DeBERTa-v3 side by side: kerasbert's `DebertaV2Backbone`, keras-hub's `DebertaV3Backbone` and HF transformers'
`DebertaV2Model` on the same weights, in one run: max |difference| from HF on the real tokens, and forward time.

keras-hub cannot read an HF DeBERTa folder (its `utils/transformers` has no DeBERTa converter) and its presets
download from Kaggle, so the weights are a seeded random-init HF `DebertaV2Model` of deberta-v3-small's shape and
settings (6 layers x 768, 12 heads, 128,100 tokens, 256 position buckets; norms and biases moved off 1 and 0),
saved with `save_pretrained`; kerasbert reads the folder (`from_preset`), keras-hub gets the weights copied in as
keras-hub's own conversion script copies them (`tools/checkpoint_conversion/convert_deberta_v3_checkpoints.py`).
Inputs: `--batch` rows of random ids right-padded to `--length`, real lengths spread from a quarter of it to all of
it. Each Keras backend runs in a fresh process (both Keras libraries through `predict_on_batch`, their compiled
forward; one untimed pass each, then `--repeats` passes each, alternating; median), HF (`torch.no_grad`) in its own
process. "kerasbert vs X" is X's time over kerasbert's: above 1, kerasbert is faster.

Run: `.venv/bin/python benchmarks/deberta_side_by_side.py [--backends tensorflow jax torch] [--batch 8]`
"""

import argparse
import sys
import tempfile

from _timing import markdown_table, median, ratio, run_worker, timed
from matmul_ceiling import measure, report
from run_all import header

CONFIG = {"vocab_size": 128100, "hidden_size": 768, "num_hidden_layers": 6, "num_attention_heads": 12,
          "intermediate_size": 3072, "max_position_embeddings": 512, "relative_attention": True,
          "pos_att_type": ["p2c", "c2p"], "position_buckets": 256, "max_relative_positions": -1,
          "norm_rel_ebd": "layer_norm", "share_att_key": True, "position_biased_input": False, "type_vocab_size": 0,
          "layer_norm_eps": 1e-7, "hidden_act": "gelu"}


def batch(size, length):
    """Token ids and padding mask (numpy, seed 0): right-padded rows, real lengths spread over [length/4, length]."""
    import numpy as np

    lengths = np.linspace(length // 4, length, size).astype(int)
    mask = (np.arange(length)[None, :] < lengths[:, None]).astype("int32")
    ids = np.random.default_rng(0).integers(3, CONFIG["vocab_size"], (size, length)) * mask
    return {"token_ids": ids.astype("int32"), "segment_ids": np.zeros_like(ids, "int32"), "padding_mask": mask}


def write_folder(folder):
    import torch
    import transformers

    torch.manual_seed(0)
    model = transformers.DebertaV2Model(transformers.DebertaV2Config(**CONFIG)).eval()
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                weight.add_(torch.randn_like(weight) * 0.1)
    model.save_pretrained(folder)


def keras_hub_backbone(folder):
    """keras-hub's `DebertaV3Backbone` with the folder's weights, copied as its conversion script does."""
    import keras_hub
    from safetensors.numpy import load_file

    weights = load_file(f"{folder}/model.safetensors")
    heads, width = CONFIG["num_attention_heads"], CONFIG["hidden_size"]
    model = keras_hub.models.DebertaV3Backbone(
        vocabulary_size=CONFIG["vocab_size"], num_layers=CONFIG["num_hidden_layers"], num_heads=heads,
        hidden_dim=width, intermediate_dim=CONFIG["intermediate_size"], dropout=0.0,
        max_sequence_length=CONFIG["max_position_embeddings"], bucket_size=CONFIG["position_buckets"])
    model.get_layer("token_embedding").embeddings.assign(weights["embeddings.word_embeddings.weight"])
    norm = model.get_layer("embeddings_layer_norm")
    norm.gamma.assign(weights["embeddings.LayerNorm.weight"])
    norm.beta.assign(weights["embeddings.LayerNorm.bias"])
    relative = model.get_layer("rel_embedding")
    relative.rel_embeddings.assign(weights["encoder.rel_embeddings.weight"])
    relative.layer_norm.gamma.assign(weights["encoder.LayerNorm.weight"])
    relative.layer_norm.beta.assign(weights["encoder.LayerNorm.bias"])
    for index in range(CONFIG["num_hidden_layers"]):
        layer = model.get_layer(f"disentangled_attention_encoder_layer_{index}")
        prefix = f"encoder.layer.{index}"
        attention = layer._self_attention_layer
        for dense, name in ((attention._query_dense, "query_proj"), (attention._key_dense, "key_proj"),
                            (attention._value_dense, "value_proj")):
            dense.kernel.assign(weights[f"{prefix}.attention.self.{name}.weight"].T.reshape(width, heads, -1))
            dense.bias.assign(weights[f"{prefix}.attention.self.{name}.bias"].reshape(heads, -1))
        for dense, name in ((attention._output_dense, "attention.output.dense"),
                            (layer._feedforward_intermediate_dense, "intermediate.dense"),
                            (layer._feedforward_output_dense, "output.dense")):
            dense.kernel.assign(weights[f"{prefix}.{name}.weight"].T)
            dense.bias.assign(weights[f"{prefix}.{name}.bias"])
        for norm, name in ((layer._self_attention_layer_norm, "attention.output.LayerNorm"),
                           (layer._feedforward_layer_norm, "output.LayerNorm")):
            norm.gamma.assign(weights[f"{prefix}.{name}.weight"])
            norm.beta.assign(weights[f"{prefix}.{name}.bias"])
    return model


def keras_worker(size, length, repeats, folder):
    import numpy as np
    from _timing import emit

    from kerasbert.families import DebertaV2Backbone

    inputs = batch(size, length)
    reference = np.load(f"{folder}/hf_output.npy")
    real = inputs["padding_mask"].astype(bool)
    ours, theirs = DebertaV2Backbone.from_preset(folder), keras_hub_backbone(folder)
    hub_inputs = {"token_ids": inputs["token_ids"], "padding_mask": inputs["padding_mask"]}
    runs = {"kerasbert": lambda: ours.predict_on_batch(inputs)["sequence_output"],  # compiled, as deployed
            "keras-hub": lambda: theirs.predict_on_batch(hub_inputs)}
    result = {f"{name} diff": float(np.abs(np.asarray(run()) - reference)[real].max()) for name, run in runs.items()}
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            times[name] += timed(run, repeats=1, warmup=0)
    result.update({name: median(values) for name, values in times.items()})
    emit(result)


def hf_worker(size, length, repeats, folder):
    import numpy as np
    import torch
    import transformers
    from _timing import emit

    model = transformers.AutoModel.from_pretrained(folder).eval()
    inputs = batch(size, length)
    ids, mask = (torch.tensor(inputs[key], dtype=torch.long) for key in ("token_ids", "padding_mask"))
    with torch.no_grad():
        np.save(f"{folder}/hf_output.npy", model(input_ids=ids, attention_mask=mask).last_hidden_state.numpy())
        emit({"hf": median(timed(lambda: model(input_ids=ids, attention_mask=mask), repeats=repeats))})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax", "torch"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(header("benchmarks/deberta_side_by_side.py " + " ".join(sys.argv[1:])))
    print(report(measure((1024,), 3)))
    shape = (args.batch, args.length, args.repeats)
    with tempfile.TemporaryDirectory() as folder:
        write_folder(folder)
        hf = run_worker("deberta_side_by_side.py", "--hf", *shape, folder, timeout=3600)["hf"]
        results = {backend: run_worker("deberta_side_by_side.py", "--keras", *shape, folder, timeout=3600,
                                       keras_backend=backend) for backend in args.backends}
    rows = [[backend, f"{result['kerasbert diff']:.1e}", f"{result['keras-hub diff']:.1e}",
             round(1000 * result["kerasbert"]), round(1000 * result["keras-hub"]), round(1000 * hf),
             ratio(result["keras-hub"], result["kerasbert"]), ratio(hf, result["kerasbert"])]
            for backend, result in results.items()]
    print(f"\ndeberta-v3-small shape (random weights), float32, batch {args.batch} x {args.length} tokens, median of "
          f"{args.repeats} forward passes after one untimed; max |diff| from HF over the real tokens\n")
    print(markdown_table(["backend", "kerasbert diff", "keras-hub diff", "kerasbert ms", "keras-hub ms", "HF ms",
                          "kerasbert vs keras-hub", "kerasbert vs HF"], rows))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--keras"]:
        keras_worker(*(int(value) for value in sys.argv[2:5]), sys.argv[5])
    elif sys.argv[1:2] == ["--hf"]:
        hf_worker(*(int(value) for value in sys.argv[2:5]), sys.argv[5])
    else:
        main()
