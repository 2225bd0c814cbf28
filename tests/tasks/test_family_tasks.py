"""Task models on every family of the BERT family, from HF folders with their own tokenizers (issue 19).

Reference: HF transformers (CPU torch) on the same folders: a seeded, randomly initialised small model of each
family saved with `save_pretrained`, beside a real-format tokenizer (RoBERTa: byte-level BPE trained on the
Austen novels; ALBERT: a SentencePiece unigram model trained on them with ALBERT's settings; DistilBERT and
ELECTRA: the real uncased WordPiece vocabulary), each written by HF's own tokenizer class. No real weights of
these families can be downloaded here; real checkpoints go through the same code.
"""

import importlib.util
import inspect
import pathlib
import shutil

import keras
import numpy as np
import pandas as pd
import pytest

from kerasbert.data.answer_spans import prepare_qa_features
from kerasbert.data.shipped import load_dataset
from kerasbert.data.token_alignment import encode_words
from kerasbert.families import (
    AlbertTokenizer,
    BertPreprocessor,
    BertTokenizer,
    RobertaTokenizer,
    tokenizer_from_preset,
)
from kerasbert.families.family import backbone_class_for
from kerasbert.presets.checkpoint import FamilyMismatchError
from kerasbert.presets.loading import load_checkpoint
from kerasbert.tasks import (
    BertClassifier,
    BertMultipleChoice,
    BertQuestionAnswerer,
    BertTokenClassifier,
)

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-4
FAMILIES = ("roberta", "albert", "distilbert", "electra")
TOKENIZER_CLASSES = {"roberta": RobertaTokenizer, "albert": AlbertTokenizer, "distilbert": BertTokenizer,
                     "electra": BertTokenizer}
SIZES = {"hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 64, "num_hidden_layers": 2}


def load_helper(name):
    """A helper module of the tokenizer tests (they are no package; pytest imports them by path)."""
    path = pathlib.Path(__file__).parents[1] / "tokenizers" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hf_model(family, vocabulary_size):
    """A seeded random HF base model of `family` (positions for 128 tokens)."""
    if family == "roberta":
        config = transformers.RobertaConfig(vocab_size=vocabulary_size, **SIZES, max_position_embeddings=130,
                                            type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1)
    elif family == "albert":
        config = transformers.AlbertConfig(vocab_size=vocabulary_size, **SIZES, embedding_size=16,
                                           max_position_embeddings=128)
    elif family == "distilbert":
        config = transformers.DistilBertConfig(vocab_size=vocabulary_size, dim=32, n_layers=2, n_heads=4,
                                               hidden_dim=64, max_position_embeddings=128)
    else:
        config = transformers.ElectraConfig(vocab_size=vocabulary_size, **SIZES, embedding_size=16,
                                            max_position_embeddings=128)
    torch.manual_seed(0)
    return transformers.AutoModel.from_config(config).eval()


def hf_tokenizer(family, folder, minilm_path):
    """HF's own tokenizer of `family`, made from the tokenizer's source files."""
    if family == "roberta":
        load_helper("roberta_assets").train_roberta_folder(folder)
        return load_helper("roberta_assets").make_hf_roberta(folder)
    if family == "albert":
        assets = load_helper("albert_assets")
        return assets.hf_albert_tokenizer(assets.train_spiece(folder))
    return transformers.BertTokenizerFast(str(pathlib.Path(minilm_path) / "vocab.txt"), do_lower_case=True)


@pytest.fixture(scope="session")
def family_folder(tmp_path_factory, minilm_path):
    """`family_folder(family)` -> an HF folder (model + tokenizer, both saved by HF), built once."""
    built = {}

    def build(family):
        if family not in built:
            folder = tmp_path_factory.mktemp(f"{family}_checkpoint")
            tokenizer = hf_tokenizer(family, folder, minilm_path)
            tokenizer.save_pretrained(str(folder))
            hf_model(family, len(tokenizer)).save_pretrained(str(folder))
            built[family] = folder
        return built[family]

    return build


def real_texts(count=12):
    reviews = load_dataset("uci_sentiment", "test")["text"].tolist()[: count // 2]
    chapters = [text[:400] for text in load_dataset("jane_austen", "test")["text"].tolist()[: count - count // 2]]
    return reviews + chapters


def hf_reference(folder):
    return (transformers.AutoTokenizer.from_pretrained(str(folder)),
            transformers.AutoModel.from_pretrained(str(folder)).eval())


def hf_outputs(model, encoded):
    accepted = inspect.signature(model.forward).parameters  # DistilBERT takes no token_type_ids
    with torch.no_grad():
        outputs = model(**{key: torch.tensor(value) for key, value in encoded.items() if key in accepted})
    pooled = getattr(outputs, "pooler_output", None)
    return outputs.last_hidden_state.numpy(), None if pooled is None else pooled.numpy()


@pytest.mark.parametrize("family", FAMILIES)
def test_backbone_on_real_text_equals_hf_through_the_family_tokenizer(family, family_folder):
    folder = family_folder(family)
    preprocessor = BertPreprocessor.from_preset(folder, sequence_length=64, pad_to_sequence_length=False)
    assert type(preprocessor.tokenizer) is TOKENIZER_CLASSES[family]
    checkpoint = load_checkpoint(folder)
    backbone = backbone_class_for(checkpoint).from_checkpoint(checkpoint)
    reference_tokenizer, reference = hf_reference(folder)
    texts = real_texts()
    pairs = (texts[:6], texts[6:])
    for inputs, hf_inputs in ((texts, (texts,)), (pairs, pairs)):
        ours = {name: np.asarray(value) for name, value in preprocessor(inputs).items()}
        # transformers 5's ALBERT tokenizer leaves token_type_ids out unless asked (its model then reads zeros);
        # ALBERT was pre-trained with them, as kerasbert packs.
        encoded = reference_tokenizer(*hf_inputs, truncation="longest_first", max_length=64, padding=True,
                                      return_tensors="np", return_token_type_ids=family != "distilbert")
        np.testing.assert_array_equal(ours["token_ids"], encoded["input_ids"])
        np.testing.assert_array_equal(ours["padding_mask"], encoded["attention_mask"].astype(bool))
        if "token_type_ids" in encoded:
            np.testing.assert_array_equal(ours["segment_ids"], encoded["token_type_ids"])
        outputs = backbone(ours)
        sequence, pooled = hf_outputs(reference, encoded)
        real = ours["padding_mask"]
        sequence_difference = np.abs(np.asarray(outputs["sequence_output"])[real] - sequence[real]).max()
        print(f"{family}: {len(ours['token_ids'])} rows, max |sequence - HF| {sequence_difference:.2e}")
        assert sequence_difference <= TOLERANCE
        if pooled is not None:
            pooled_difference = np.abs(np.asarray(outputs["pooled_output"]) - pooled).max()
            print(f"{family}: max |pooled - HF| {pooled_difference:.2e}")
            assert pooled_difference <= TOLERANCE


def test_roberta_packs_pairs_with_its_double_separator(family_folder):
    preprocessor = BertPreprocessor.from_preset(family_folder("roberta"), sequence_length=16)
    packed = preprocessor((["Emma was handsome"], ["and rich"]))
    tokenizer = preprocessor.tokenizer
    first, second = (tokenizer.tokenize(text).numpy().tolist() for text in ("Emma was handsome", "and rich"))
    ids = np.asarray(packed["token_ids"])[0].tolist()
    expected = [tokenizer.cls_token_id, *first, tokenizer.sep_token_id, tokenizer.sep_token_id, *second,
                tokenizer.sep_token_id]
    assert ids == expected + [tokenizer.pad_token_id] * (16 - len(expected))
    assert tokenizer.pad_token_id == 1 and not np.asarray(packed["segment_ids"]).any()


@pytest.mark.parametrize("family", FAMILIES)
def test_classifier_of_every_family_trains_and_reloads_from_keras(family, family_folder, uci_reviews, tmp_path):
    classifier = BertClassifier.from_preset(family_folder(family), sequence_length=64)
    assert classifier.backbone.family == family
    before = [np.array(v) for v in classifier.backbone.trainable_weights]
    history = classifier.fit(uci_reviews[0], epochs=1, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert any(not np.array_equal(b, np.asarray(v)) for b, v in zip(before, classifier.backbone.trainable_weights))
    path = tmp_path / f"{family}.keras"
    classifier.save(path)
    reloaded = keras.saving.load_model(path)
    assert type(reloaded.tokenizer) is TOKENIZER_CLASSES[family]
    texts = uci_reviews[1]["text"].tolist()
    expected, got = classifier.predict(texts, verbose=0), reloaded.predict(texts, verbose=0)
    np.testing.assert_allclose(np.stack(got["probabilities"]), np.stack(expected["probabilities"]), atol=1e-6)


def test_roberta_classifier_reloads_in_a_fresh_process_and_takes_raw_text(family_folder, uci_reviews, tmp_path,
                                                                          fresh_python):
    classifier = BertClassifier.from_preset(family_folder("roberta"), sequence_length=64)
    classifier.fit(uci_reviews[0], epochs=1, batch_size=8, verbose=0)
    path = tmp_path / "roberta.keras"
    classifier.save(path)
    texts = uci_reviews[1]["text"].tolist()[:4]
    expected = classifier.predict(texts)["label"].tolist()
    script = (
        "import keras, sys, json; import kerasbert.tasks\n"
        f"model = keras.saving.load_model({str(path)!r})\n"
        f"print(json.dumps(model.predict({texts!r}, verbose=0)['label'].tolist()))\n"
    )
    result = fresh_python(script)
    assert result.stdout.strip().splitlines()[-1] == str(expected).replace("'", '"')


@pytest.mark.parametrize("family", ["roberta", "albert"])
def test_word_alignment_equals_hf_is_split_into_words(family, family_folder):
    folder = family_folder(family)
    tokenizer = tokenizer_from_preset(folder)
    kwargs = {"add_prefix_space": True} if family == "roberta" else {}
    reference = transformers.AutoTokenizer.from_pretrained(str(folder), **kwargs)
    sentences = [text.split() for text in real_texts(8)]
    features = encode_words(tokenizer, sentences, sequence_length=64)
    encoded = reference(sentences, is_split_into_words=True, truncation=True, max_length=64)
    assert features.token_ids.to_list() == encoded["input_ids"]
    word_ids = [[-1 if w is None else w for w in encoded.word_ids(i)] for i in range(len(sentences))]
    assert features.word_ids.to_list() == word_ids


@pytest.mark.parametrize("family", ["roberta", "albert"])
def test_token_classifier_trains_and_tags_raw_text(family, family_folder, tmp_path):
    conll = pd.DataFrame({"tokens": [["Emma", "Woodhouse", "lived", "at", "Hartfield", "."],
                                     ["Mr.", "Knightley", "came", "from", "Donwell", "Abbey", "."]],
                          "tags": [["B-PER", "I-PER", "O", "O", "B-LOC", "O"],
                                   ["B-PER", "I-PER", "O", "O", "B-LOC", "I-LOC", "O"]]})
    tagger = BertTokenClassifier.from_preset(family_folder(family), sequence_length=32)
    tagger.fit(conll, epochs=2, batch_size=2, verbose=0)
    predicted = tagger.predict(["Emma Woodhouse lived at Hartfield."])
    assert len(predicted["tags"].iloc[0]) == 5  # one tag per word, the first word included
    path = tmp_path / "tagger.keras"
    tagger.save(path)
    reloaded = keras.saving.load_model(path)
    assert reloaded.predict(["Emma Woodhouse lived at Hartfield."])["tags"].tolist() == predicted["tags"].tolist()


def test_question_answering_windows_equal_hf_for_roberta(family_folder):
    folder = family_folder("roberta")
    tokenizer = tokenizer_from_preset(folder)
    reference = transformers.AutoTokenizer.from_pretrained(str(folder))
    context = load_dataset("jane_austen", "test")["text"].iloc[0][:900]
    question = "Who was handsome, clever, and rich?"
    features = prepare_qa_features(tokenizer, [question], [context], max_sequence_length=64, doc_stride=16)
    encoded = reference(question, context, truncation="only_second", max_length=64, stride=16,
                        return_overflowing_tokens=True)
    assert features.token_ids.to_list() == encoded["input_ids"]
    assert not np.concatenate(features.segment_ids.to_list()).any()


def test_question_answerer_and_multiple_choice_train_on_roberta(family_folder):
    folder = family_folder("roberta")
    squad = pd.DataFrame({"question": ["Who lived at Hartfield?"], "context": ["Emma Woodhouse lived at Hartfield."],
                          "answer_texts": [["Emma Woodhouse"]], "answer_starts": [[0]]})
    answerer = BertQuestionAnswerer.from_preset(folder, sequence_length=48, doc_stride=8, max_question_length=16)
    answerer.fit(squad, epochs=1, batch_size=1, verbose=0)
    assert answerer.predict(squad[["question", "context"]])["answer"].iloc[0] in squad["context"].iloc[0]
    choices = pd.DataFrame({"context": ["Emma lived at"], "endings": [["Hartfield.", "the moon."]], "label": [0]})
    chooser = BertMultipleChoice.from_preset(folder, num_choices=2, sequence_length=32)
    chooser.fit(choices, epochs=1, batch_size=1, verbose=0)
    assert chooser.predict(choices).shape[0] == 1


@pytest.mark.parametrize("family", ["roberta", "albert"])
def test_preset_round_trip_and_hf_export_keep_tokenizer_and_outputs(family, family_folder, tmp_path):
    folder = family_folder(family)
    classifier = BertClassifier.from_preset(folder, num_classes=2, sequence_length=64)
    texts = real_texts(6)
    expected = classifier.backbone(classifier.preprocessor(texts))["sequence_output"]
    saved = classifier.backbone.save_to_preset(tmp_path / "kerasbert", tokenizer=classifier.tokenizer)
    again = BertClassifier.from_preset(saved, num_classes=2, sequence_length=64)
    assert again.tokenizer.folder_settings() == classifier.tokenizer.folder_settings()
    assert again.tokenizer.get_vocabulary() == classifier.tokenizer.get_vocabulary()
    np.testing.assert_allclose(again.backbone(again.preprocessor(texts))["sequence_output"], expected, atol=1e-6)
    exported = classifier.backbone.export_to_hf(tmp_path / "hf", tokenizer=classifier.tokenizer)
    reference_tokenizer, reference = hf_reference(exported)
    encoded = reference_tokenizer(texts, truncation=True, max_length=64, padding=True, return_tensors="np")
    ours = classifier.preprocessor(texts)
    np.testing.assert_array_equal(np.asarray(ours["token_ids"]), encoded["input_ids"])
    sequence, _ = hf_outputs(reference, encoded)
    real = np.asarray(ours["padding_mask"])
    assert np.abs(np.asarray(expected)[real] - sequence[real]).max() <= TOLERANCE


def test_missing_or_wrong_tokenizer_files_are_named_before_any_model_is_built(family_folder, tmp_path):
    roberta = tmp_path / "roberta"
    shutil.copytree(family_folder("roberta"), roberta)
    (roberta / "merges.txt").unlink()
    (roberta / "tokenizer.json").unlink(missing_ok=True)  # with it, the folder still has a tokenizer
    with pytest.raises(FileNotFoundError, match="merges.txt"):
        BertClassifier.from_preset(roberta, num_classes=2)
    albert = tmp_path / "albert"
    shutil.copytree(family_folder("albert"), albert)
    (albert / "spiece.model").write_text("not a model", encoding="utf-8")
    with pytest.raises(ValueError, match="spiece.model is not a SentencePiece model"):
        BertClassifier.from_preset(albert, num_classes=2)
    with pytest.raises(FamilyMismatchError, match="roberta checkpoint; BertTokenizer"):
        BertTokenizer.from_preset(family_folder("roberta"))


def test_a_tokenizer_of_another_family_cannot_feed_a_backbone(family_folder, minilm_path):
    classifier = BertClassifier.from_preset(family_folder("roberta"), num_classes=2, sequence_length=32)
    bert_preprocessor = BertPreprocessor(BertTokenizer(str(pathlib.Path(minilm_path) / "vocab.txt")), 32)
    with pytest.raises(FamilyMismatchError, match="BertTokenizer cannot feed a RobertaBackbone"):
        BertClassifier(backbone=classifier.backbone, preprocessor=bert_preprocessor, num_classes=2)
