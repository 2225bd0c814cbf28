"""Masked-LM heads of every family and ELECTRA's discriminator head against HF transformers (CPU torch).

Reference: HF `RobertaForMaskedLM`, `AlbertForMaskedLM`, `DistilBertForMaskedLM`, `ElectraForMaskedLM` (the
ELECTRA generator) and `ElectraForPreTraining` (the discriminator) of the seeded random small configs of
conftest.py, saved with `save_pretrained` (no real weights of these families can be downloaded here). Bar: max
|logit difference| <= 1e-4 in float32 at the real tokens of a padded batch.
"""

import keras
import numpy as np
import pytest

from kerasbert.families.checkpoint_weights import export_links, masked_lm_head_links
from kerasbert.families.electra.electra_weights import load_replaced_token_head
from kerasbert.families.family import backbone_class_for
from kerasbert.layers.heads import MaskedLMHead, ReplacedTokenHead
from kerasbert.presets.loading import load_checkpoint
from kerasbert.tasks.bert_masked_lm import BertMaskedLM
from kerasbert.tasks.masked_lm_common import build_masked_lm_head, load_masked_lm_head

from .conftest import VOCABULARY_SIZE, hf_configs
from .test_family_backbones import FAMILIES, hf_forward, padded_batch

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-4
MASKED_LM_CLASSES = {"bert": "BertForMaskedLM", "albert": "AlbertForMaskedLM", "roberta": "RobertaForMaskedLM",
                     "distilbert": "DistilBertForMaskedLM", "electra": "ElectraForMaskedLM"}
# Every id the tests draw, as a WordPiece vocabulary (the BERT-tokenizer families load it with from_preset).
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"word{i}" for i in range(5, VOCABULARY_SIZE)]


@pytest.fixture(scope="module")
def hf_head_model(tmp_path_factory):
    """`hf_head_model(name, class_name)` -> (folder, HF model in eval mode), seed 0, with a vocab.txt."""
    built = {}

    def build(name, class_name):
        if (name, class_name) not in built:
            torch.manual_seed(0)
            model = getattr(transformers, class_name)(hf_configs(transformers)[name][0]).eval()
            folder = tmp_path_factory.mktemp(f"{name}_{class_name}")
            model.save_pretrained(str(folder))
            (folder / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
            built[name, class_name] = folder, model
        return built[name, class_name]

    return build


def hf_logits(model, inputs):
    return hf_forward(model, inputs).logits.numpy()


def max_diff_at_real_tokens(ours, reference, padding_mask):
    real = padding_mask.astype(bool)
    return float(np.abs(ours[real] - reference[real]).max())


@pytest.mark.all_backends
@pytest.mark.filterwarnings("ignore:.*the pooler keeps its fresh initialisation")  # HF masked LMs have no pooler
@pytest.mark.parametrize("name", ["bert", "roberta", "albert", "albert_grouped", "distilbert", "electra",
                                  "electra_same_width"])
def test_masked_lm_head_of_every_family_gives_hf_logits(name, hf_head_model):
    family = name.split("_")[0]
    folder, hf_model = hf_head_model(name, MASKED_LM_CLASSES[family])
    checkpoint = load_checkpoint(str(folder))
    backbone = backbone_class_for(checkpoint).from_checkpoint(checkpoint)
    head = build_masked_lm_head(backbone)
    _, padding_token_id, num_segments, _ = FAMILIES[name]
    inputs = padded_batch(padding_token_id, num_segments)
    head(backbone(inputs)["sequence_output"])  # builds the head before its weights load
    load_masked_lm_head(head, checkpoint, "test", backbone.family)
    ours = keras.ops.convert_to_numpy(head(backbone(inputs)["sequence_output"]))
    diff = max_diff_at_real_tokens(ours, hf_logits(hf_model, inputs), inputs["padding_mask"])
    print(f"{name} masked-LM logits vs transformers {MASKED_LM_CLASSES[family]}: max |diff| {diff:.2e}")
    assert diff <= TOLERANCE


@pytest.mark.parametrize("name", ["electra", "distilbert"])
def test_bert_masked_lm_from_an_hf_folder_of_another_family(name, hf_head_model):
    folder, hf_model = hf_head_model(name, MASKED_LM_CLASSES[name])
    fill = BertMaskedLM.from_preset(str(folder))
    _, padding_token_id, num_segments, _ = FAMILIES[name]
    inputs = padded_batch(padding_token_id, num_segments)
    positions = np.array([[1, 4, 8], [0, 2, 5], [0, 1, 1]], "int32")  # real tokens of each row
    ours = keras.ops.convert_to_numpy(fill({**inputs, "mask_positions": positions}))
    reference = np.take_along_axis(hf_logits(hf_model, inputs), positions[:, :, None], axis=1)
    diff = float(np.abs(ours - reference).max())
    print(f"BertMaskedLM.from_preset({name}) vs transformers: max |diff| {diff:.2e}")
    assert diff <= TOLERANCE
    assert set(fill.head_weights()) == set(export_links(masked_lm_head_links(fill.mlm_head, name)))


@pytest.mark.all_backends
def test_electra_discriminator_head_gives_hf_electra_for_pretraining_logits(hf_head_model):
    folder, hf_model = hf_head_model("electra", "ElectraForPreTraining")
    checkpoint = load_checkpoint(str(folder))
    backbone = backbone_class_for(checkpoint).from_checkpoint(checkpoint)
    head = ReplacedTokenHead(activation=backbone.activation, name="rtd_head")
    inputs = padded_batch(0, 2)
    head(backbone(inputs)["sequence_output"])
    load_replaced_token_head(head, checkpoint)
    ours = keras.ops.convert_to_numpy(head(backbone(inputs)["sequence_output"]))
    assert ours.shape == inputs["token_ids"].shape
    diff = max_diff_at_real_tokens(ours, hf_logits(hf_model, inputs), inputs["padding_mask"])
    print(f"ELECTRA discriminator logits vs transformers ElectraForPreTraining: max |diff| {diff:.2e}")
    assert diff <= TOLERANCE


def test_a_checkpoint_without_the_familys_head_warns_and_keeps_a_fresh_head(hf_head_model):
    folder, _ = hf_head_model("electra", "ElectraForPreTraining")  # a discriminator: no generator head
    with pytest.warns(UserWarning, match=r"no masked-LM head \(generator_\*\)"):
        BertMaskedLM.from_preset(str(folder))


def test_transform_dim_is_configuration_and_must_fit_a_tied_table():
    head = MaskedLMHead(vocabulary_size=30, transform_dim=4)
    logits = head(np.ones((1, 3, 8), "float32"))
    assert tuple(logits.shape) == (1, 3, 30) and tuple(head.dense.kernel.shape) == (8, 4)
    assert MaskedLMHead.from_config(head.get_config()).transform_dim == 4
    old_config = {key: value for key, value in head.get_config().items() if key != "transform_dim"}
    assert MaskedLMHead.from_config(old_config).transform_dim is None  # configs saved before the argument load
    embedding = keras.layers.Embedding(30, 6)
    embedding.build((None,))
    with pytest.raises(ValueError, match="tied token embedding is 6 wide but the transform gives 8.*transform_dim=6"):
        MaskedLMHead(vocabulary_size=30, token_embedding=embedding)(np.ones((1, 3, 8), "float32"))
