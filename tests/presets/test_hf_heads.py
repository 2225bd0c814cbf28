"""Task heads read from and written to HF checkpoints, checked against transformers.

Reference: `transformers.BertForPreTraining` (random tiny config, CPU torch): its MLM
logits and NSP logits must equal kerasbert's backbone + MaskedLMHead + NSPHead.
"""

import numpy as np
import pytest

from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.checkpoint_weights import assign_links, dense_links, export_links, masked_lm_head_links
from kerasbert.layers.heads import MaskedLMHead, NSPHead
from kerasbert.presets.loading import load_checkpoint

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")


@pytest.fixture(scope="module")
def hf_pretraining_folder(tmp_path_factory):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=40, hidden_act="gelu_new",
        layer_norm_eps=1e-7,
    )
    model = transformers.BertForPreTraining(config).eval()
    with torch.no_grad():  # non-trivial biases, so that a mapping mistake shows
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    folder = tmp_path_factory.mktemp("hf_pretraining")
    model.save_pretrained(folder)
    return folder, model


def build_pretraining_model(checkpoint):
    backbone = BertBackbone(**checkpoint.backbone_config)
    mlm = MaskedLMHead(
        checkpoint.backbone_config["vocabulary_size"], token_embedding=backbone.token_embedding,
        activation=checkpoint.backbone_config["activation"],
        layer_norm_epsilon=checkpoint.backbone_config["layer_norm_epsilon"],
    )
    nsp = NSPHead()
    mlm.build((None, None, backbone.hidden_dim))
    nsp.build((None, backbone.hidden_dim))
    return backbone, mlm, nsp


def test_pretraining_heads_match_transformers(hf_pretraining_folder):
    folder, reference = hf_pretraining_folder
    checkpoint = load_checkpoint(str(folder))
    assert checkpoint.backbone_config["activation"] == "gelu_approximate"
    assert checkpoint.backbone_config["layer_norm_epsilon"] == 1e-7
    assert set(checkpoint.heads("cls.seq_relationship.")) == {
        "cls.seq_relationship.weight", "cls.seq_relationship.bias"}

    backbone, mlm, nsp = build_pretraining_model(checkpoint)
    from kerasbert.families.checkpoint_weights import apply_checkpoint

    apply_checkpoint(backbone, checkpoint)
    assign_links(masked_lm_head_links(mlm), checkpoint.state_dict, checkpoint.source)
    assign_links(dense_links(nsp, "cls.seq_relationship"), checkpoint.state_dict, checkpoint.source)

    rng = np.random.default_rng(0)
    token_ids = rng.integers(5, 99, size=(3, 10)).astype("int32")
    mask = (np.arange(10)[None] < np.array([[10], [6], [8]])).astype("int32")
    segments = (np.arange(10)[None] >= 5).astype("int32").repeat(3, 0)
    with torch.no_grad():
        out = reference(
            input_ids=torch.tensor(token_ids, dtype=torch.long),
            token_type_ids=torch.tensor(segments, dtype=torch.long),
            attention_mask=torch.tensor(mask, dtype=torch.long),
        )
    ours = backbone({"token_ids": token_ids, "segment_ids": segments, "padding_mask": mask})
    mlm_logits = np.asarray(mlm(ours["sequence_output"]))
    nsp_logits = np.asarray(nsp(ours["pooled_output"]))
    real = mask.astype(bool)
    mlm_diff = np.abs(mlm_logits[real] - out.prediction_logits.numpy()[real]).max()
    nsp_diff = np.abs(nsp_logits - out.seq_relationship_logits.numpy()).max()
    print(f"BertForPreTraining heads: MLM logits {mlm_diff:.2e}, NSP logits {nsp_diff:.2e}")
    assert mlm_diff <= 1e-4 and nsp_diff <= 1e-5


def test_export_with_heads_reloads_in_transformers(hf_pretraining_folder, tmp_path):
    folder, reference = hf_pretraining_folder
    checkpoint = load_checkpoint(str(folder))
    backbone, mlm, nsp = build_pretraining_model(checkpoint)
    from kerasbert.families.checkpoint_weights import apply_checkpoint

    apply_checkpoint(backbone, checkpoint)
    assign_links(masked_lm_head_links(mlm), checkpoint.state_dict, checkpoint.source)
    assign_links(dense_links(nsp, "cls.seq_relationship"), checkpoint.state_dict, checkpoint.source)
    heads = {**export_links(masked_lm_head_links(mlm)), **export_links(dense_links(nsp, "cls.seq_relationship"))}
    exported = backbone.export_to_hf(tmp_path / "exported", heads=heads)

    reloaded = transformers.BertForPreTraining.from_pretrained(str(exported)).eval()
    original = dict(reference.state_dict())
    for name, value in reloaded.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), original[name].numpy(), err_msg=name)


@pytest.mark.parametrize(
    "model_class, prefix",
    [("BertForSequenceClassification", "classifier."), ("BertForQuestionAnswering", "qa_outputs.")],
)
def test_task_heads_and_labels_are_kept_for_applications(model_class, prefix, tmp_path):
    config = transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=20,
        id2label={0: "negative", 1: "neutral", 2: "positive"},
    )
    getattr(transformers, model_class)(config).save_pretrained(tmp_path)
    checkpoint = load_checkpoint(str(tmp_path))
    assert checkpoint.id2label == {0: "negative", 1: "neutral", 2: "positive"}
    heads = checkpoint.heads(prefix)
    assert {name.split(".")[-1] for name in heads} == {"weight", "bias"}
    assert "embeddings.word_embeddings.weight" in checkpoint.state_dict  # `bert.` prefix stripped
    backbone = BertBackbone.from_preset(str(tmp_path))
    assert backbone.num_layers == 1
