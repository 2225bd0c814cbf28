"""Seeded, randomly initialised small HF transformers models of each BERT-family type, saved as HF folders.

No real ALBERT, RoBERTa, DistilBERT or ELECTRA weights can be downloaded here; a seeded random model
exercises the same code paths (config translation, weight names, positions, activations, poolers).
"""

import importlib.util
import io
import pathlib

import pytest

from kerasbert.data.shipped import load_dataset

VOCABULARY_SIZE = 99  # covers every id test_family_backbones.padded_batch draws (3 to 98)
SIZES = {"vocab_size": VOCABULARY_SIZE, "hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 64,
         "max_position_embeddings": 40}


def hf_configs(transformers):
    """name -> (HF config, HF base model class): one of each family, ALBERT also with grouped sharing, ELECTRA
    also with embeddings as wide as the hidden states (then HF has no projection)."""
    return {
        "bert": (transformers.BertConfig(**SIZES, num_hidden_layers=2), transformers.BertModel),
        "albert": (transformers.AlbertConfig(**SIZES, num_hidden_layers=3, embedding_size=16),
                   transformers.AlbertModel),
        "albert_grouped": (transformers.AlbertConfig(**SIZES, num_hidden_layers=4, embedding_size=16,
                                                     num_hidden_groups=2, inner_group_num=2),
                           transformers.AlbertModel),
        "roberta": (transformers.RobertaConfig(**{**SIZES, "max_position_embeddings": 42}, num_hidden_layers=2,
                                               type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1),
                    transformers.RobertaModel),
        "distilbert": (transformers.DistilBertConfig(vocab_size=VOCABULARY_SIZE, dim=32, n_layers=2, n_heads=4,
                                                     hidden_dim=64, max_position_embeddings=40),
                       transformers.DistilBertModel),
        "electra": (transformers.ElectraConfig(**SIZES, num_hidden_layers=2, embedding_size=16),
                    transformers.ElectraModel),
        "electra_same_width": (transformers.ElectraConfig(**SIZES, num_hidden_layers=2, embedding_size=32),
                               transformers.ElectraModel),
    }


@pytest.fixture(scope="session")
def hf_family_model(tmp_path_factory):
    """`hf_family_model(name)` -> (folder, HF model in eval mode), built once per session with seed 0."""
    torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    built = {}

    def build(name):
        if name not in built:
            config, model_class = hf_configs(transformers)[name]
            torch.manual_seed(0)
            model = model_class(config).eval()
            folder = tmp_path_factory.mktemp(name)
            model.save_pretrained(str(folder))
            built[name] = folder, model
        return built[name]

    return build



@pytest.fixture(scope="session")
def xlnet_spiece():
    """The bytes of an XLNet-style `spiece.model`: a unigram model trained with XLNet's settings
    (google-research/xlnet: control symbols `<cls>,<sep>,<pad>,<mask>,<eod>`, user-defined
    `<eop>,.,(,),",-,–,£,€`, `<unk>` 0, `<s>` 1, `</s>` 2) on 2,000 of the shipped Jane Austen paragraphs, cased,
    3,000 pieces (3 s on 2 cores)."""
    sentencepiece = pytest.importorskip("sentencepiece", reason="training the model needs sentencepiece")
    texts = load_dataset("jane_austen", "train")["text"].tolist()[:2000]
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=model, model_type="unigram", vocab_size=3000, unk_id=0,
        bos_id=1, eos_id=2, pad_id=-1, control_symbols=["<cls>", "<sep>", "<pad>", "<mask>", "<eod>"],
        user_defined_symbols=["<eop>", ".", "(", ")", '"', "-", "–", "£", "€"], character_coverage=0.99995,
        num_threads=2, minloglevel=2)
    return model.getvalue()


@pytest.fixture(scope="session")
def tokenizer_assets():
    """`tests/tokenizers/tokenizer_json_assets.py` (the tests are no package): it trains each family's
    SentencePiece model."""
    path = pathlib.Path(__file__).parents[1] / "tokenizers" / "tokenizer_json_assets.py"
    spec = importlib.util.spec_from_file_location("tokenizer_json_assets", path)
    assets = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(assets)
    return assets


@pytest.fixture(scope="session")
def deberta_spm_model(tmp_path_factory, tokenizer_assets):
    """The bytes of a DeBERTa-v3-style `spm.model` of 3,001 pieces (`tokenizer_json_assets.py` trains it)."""
    return (tokenizer_assets.train_deberta_spm(tmp_path_factory.mktemp("spm")) / "spm.model").read_bytes()


@pytest.fixture(scope="session")
def seeded_task_folder():
    """`seeded_task_folder(config, class_name, folder, files)` -> `(HF model in eval mode, folder)`: HF `class_name`
    of `config` built with seed 0, its norms and biases moved off HF's 1 and 0 so that every weight tells, saved
    in `folder` with `files` (`{name: bytes}`, the tokenizer's)."""
    torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

    def build(config, class_name, folder, files):
        torch.manual_seed(0)
        model = getattr(transformers, class_name)(config).eval()
        with torch.no_grad():
            for name, weight in model.named_parameters():
                if "LayerNorm" in name or name.endswith("bias"):
                    weight.add_(torch.randn_like(weight) * 0.1)
        model.save_pretrained(str(folder))
        for name, data in files.items():
            (folder / name).write_bytes(data)
        return model, folder

    return build
