"""Parity at the published shapes: DeBERTa-v3, ModernBERT, Longformer and BigBird against HF transformers on
seeded random-init models of their base checkpoints' configs (every layer, full vocabulary), where the tests use
tiny configs.

Each family: HF's base model (`DebertaV2Model`, `ModernBertModel` with eager attention, `LongformerModel`,
`BigBirdModel`) of HF's config for deberta-v3-base / ModernBERT-base / longformer-base-4096 / bigbird-roberta-base,
seed 0, its LayerNorms and biases moved off 1 and 0, saved with `save_pretrained` and read by kerasbert's
`from_preset`; its masked-LM model the same way for the MLM logits. Inputs: two rows of random ids (no tokenizer of
these vocabularies is available offline), one full and one right-padded to 60% of its length, at a length that
makes each family's sparse pattern cut (ModernBERT's 128-token windows, Longformer's 512, BigBird's blocks of 64
past its full-attention fallback). Reported: max |difference| over the real positions of `sequence_output`, every
hidden state and the MLM logits, float32, TensorFlow (or `KERAS_BACKEND`).

Run: `.venv/bin/python benchmarks/family_parity.py [--families deberta modernbert longformer bigbird]`
"""

import argparse
import sys
import tempfile

from _timing import markdown_table
from run_all import header

FAMILIES = {  # name: (HF config class, its settings, base model class, masked-LM class, length)
    "deberta": ("DebertaV2Config", {"vocab_size": 128100, "hidden_size": 768, "num_hidden_layers": 12,
                                    "num_attention_heads": 12, "intermediate_size": 3072, "relative_attention": True, "pos_att_type": ["p2c", "c2p"],
                                    "position_buckets": 256, "max_relative_positions": -1, "norm_rel_ebd": "layer_norm",
                                    "share_att_key": True, "position_biased_input": False, "type_vocab_size": 0,
                                    "layer_norm_eps": 1e-7, "legacy": False},
                "DebertaV2Model", "DebertaV2ForMaskedLM", 512),
    "modernbert": ("ModernBertConfig", {}, "ModernBertModel", "ModernBertForMaskedLM", 512),
    "longformer": ("LongformerConfig", {"vocab_size": 50265, "max_position_embeddings": 4098, "type_vocab_size": 1,
                                        "layer_norm_eps": 1e-5, "attention_window": 512},
                   "LongformerModel", "LongformerForMaskedLM", 1536),
    "bigbird": ("BigBirdConfig", {}, "BigBirdModel", "BigBirdForMaskedLM", 1024),
}


def seeded(transformers, torch, class_name, config):
    torch.manual_seed(0)
    model = getattr(transformers, class_name)(config).eval()
    if hasattr(model, "set_attn_implementation") and "ModernBert" in class_name:
        model.set_attn_implementation("eager")
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "norm" in name.lower() or name.endswith("bias"):
                weight.add_(torch.randn_like(weight) * 0.1)
    return model


def inputs_of(vocabulary, length, padding_id):
    import numpy as np

    ids = np.random.default_rng(0).integers(5, vocabulary, (2, length)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, int(length * 0.6):] = 0
    ids[mask == 0] = padding_id
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


def measure(name):
    import keras
    import numpy as np
    import torch
    import transformers

    from kerasbert.families.family import backbone_class_for
    from kerasbert.presets.loading import load_checkpoint
    from kerasbert.tasks.masked_lm_common import build_masked_lm_head, load_masked_lm_head

    config_class, settings, base_class, mlm_class, length = FAMILIES[name]
    config = getattr(transformers, config_class)(**settings)
    inputs = inputs_of(config.vocab_size, length, config.pad_token_id or 0)
    real = inputs["padding_mask"].astype(bool)
    torch_inputs = {"input_ids": torch.tensor(inputs["token_ids"], dtype=torch.long),
                    "attention_mask": torch.tensor(inputs["padding_mask"], dtype=torch.long)}
    result = {}
    with tempfile.TemporaryDirectory() as folder:
        model = seeded(transformers, torch, base_class, config)
        model.save_pretrained(folder)
        with torch.no_grad():
            theirs = model(**torch_inputs, output_hidden_states=True)
        checkpoint = load_checkpoint(folder)
        backbone = backbone_class_for(checkpoint).from_checkpoint(checkpoint, output_hidden_states=True)
        ours = backbone(inputs)
        result["sequence"] = float(np.abs(keras.ops.convert_to_numpy(ours["sequence_output"])
                                          - theirs.last_hidden_state.numpy())[real].max())
        result["hidden states"] = max(float(np.abs(keras.ops.convert_to_numpy(a) - b.numpy()[:, :a.shape[1]])[real].max())
                                      for a, b in zip(ours["hidden_states"], theirs.hidden_states))
        result["parameters"] = f"{backbone.count_params():,}"
        del model, backbone
    with tempfile.TemporaryDirectory() as folder:
        model = seeded(transformers, torch, mlm_class, config)
        model.save_pretrained(folder)
        with torch.no_grad():
            theirs = model(**torch_inputs).logits.numpy()
        checkpoint = load_checkpoint(folder)
        backbone = backbone_class_for(checkpoint).from_checkpoint(checkpoint)
        head = build_masked_lm_head(backbone)
        positions = np.tile(np.arange(length, dtype="int32"), (2, 1))
        head(backbone(inputs)["sequence_output"][:, :1], positions[:, :1])  # builds the head before loading
        load_masked_lm_head(head, checkpoint, "BertMaskedLM", backbone.family)
        logits = keras.ops.convert_to_numpy(head(backbone(inputs)["sequence_output"], positions))
        result["MLM logits"] = float(np.abs(logits - theirs)[real].max())
    return {"family": name, "tokens": length, **result}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    args = parser.parse_args()
    print(header("benchmarks/family_parity.py " + " ".join(sys.argv[1:])))
    rows = []
    for name in args.families:
        found = measure(name)
        rows.append([found["family"], found["tokens"], found["parameters"], f"{found['sequence']:.1e}",
                     f"{found['hidden states']:.1e}", f"{found['MLM logits']:.1e}"])
        print(rows[-1], flush=True)
    print("\nmax |kerasbert - HF| over the real positions, float32, random-init models of the published configs\n")
    print(markdown_table(["family", "tokens", "backbone parameters", "sequence_output", "every hidden state",
                          "MLM logits"], rows))


if __name__ == "__main__":
    main()
