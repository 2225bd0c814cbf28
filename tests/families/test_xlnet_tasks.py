"""BertClassifier and BertQuestionAnswerer on XLNet against HF transformers (CPU torch).

Reference: HF `XLNetForSequenceClassification` (its `XLNetSequenceSummary`: the last token, a Linear, tanh; then
`logits_proj`) and `XLNetForQuestionAnsweringSimple` (`qa_outputs`) of a seeded, randomly initialised tiny XLNet
saved with `save_pretrained` beside an XLNet-style `spiece.model`, in eval mode, fed by HF's `XLNetTokenizer`
(padding on the left). Bar: max |difference| <= 1e-4 in float32 on the logits of real text.
"""

import keras
import numpy as np
import pandas as pd
import pytest

from kerasbert.families.xlnet.xlnet_backbone import XLNetBackbone
from kerasbert.tasks.bert_classifier import BertClassifier
from kerasbert.tasks.bert_question_answerer import BertQuestionAnswerer
from kerasbert.tasks.bert_token_classifier import BertTokenClassifier
from kerasbert.tasks.memory_reading import MemoryReader, memory_segments

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-4
CONTEXT = ("Mr. Bennet was so odd a mixture of quick parts, sarcastic humour, reserve, and caprice, that the "
           "experience of three-and-twenty years had been insufficient to make his wife understand his character.")
QUESTIONS = ["Who was an odd mixture?", "How many years had passed?"]


def hf_folder(model_class, spiece, folder, **settings):
    """`(model in eval mode, folder)`: a seeded tiny XLNet task model (vocabulary 3,000, mem_len 6) saved with
    the `spiece.model`; LayerNorms and biases moved off HF's 1 and 0 so that they tell apart."""
    torch.manual_seed(0)
    config = transformers.XLNetConfig(vocab_size=3000, d_model=32, n_head=4, d_inner=64, n_layer=2, mem_len=6,
                                      **settings)
    model = model_class(config).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "layer_norm" in name or name.endswith(".bias"):
                parameter.add_(torch.randn_like(parameter) * 0.1)
    model.save_pretrained(folder)
    (folder / "spiece.model").write_bytes(spiece)
    return model, folder


@pytest.fixture(scope="module")
def hf_classifier(xlnet_spiece, tmp_path_factory):
    return hf_folder(transformers.XLNetForSequenceClassification, xlnet_spiece,
                     tmp_path_factory.mktemp("xlnet_classifier"), num_labels=3)


@pytest.fixture(scope="module")
def hf_tokenizer(hf_classifier):
    return transformers.XLNetTokenizer.from_pretrained(str(hf_classifier[1]))


def max_difference(ours, theirs):
    return float(np.abs(np.asarray(ours) - np.asarray(theirs)).max())


def test_classifier_logits_match_xlnet_for_sequence_classification(hf_classifier, hf_tokenizer, uci_reviews):
    model, folder = hf_classifier
    classifier = BertClassifier.from_preset(str(folder), sequence_length=64)
    assert classifier.num_classes == 3 and isinstance(classifier.backbone, XLNetBackbone)
    texts = uci_reviews[1]["text"].tolist()[:6]
    ours, _ = classifier.predict_outputs(texts, verbose=0)
    encoded = hf_tokenizer(texts, padding=True, truncation=True, max_length=64, return_token_type_ids=True,
                           return_tensors="pt")
    assert (encoded["attention_mask"][:, 0] == 0).any()  # left padding in the reference batch
    with torch.no_grad():
        theirs = model(**encoded).logits
    difference = max_difference(ours, theirs)
    print(f"classifier logits vs XLNetForSequenceClassification: max |difference| {difference:.2e}")
    assert difference <= TOLERANCE


def test_classifier_pairs_match_hf(hf_classifier, hf_tokenizer):
    model, folder = hf_classifier
    classifier = BertClassifier.from_preset(str(folder), sequence_length=48)
    pairs = {"text": ["It is a truth universally acknowledged.", "Emma Woodhouse, handsome, clever, and rich."],
             "text_pair": ["A single man must be in want of a wife.", "She had lived nearly twenty-one years."]}
    ours, _ = classifier.predict_outputs(pairs, verbose=0)
    encoded = hf_tokenizer(pairs["text"], pairs["text_pair"], padding=True, return_token_type_ids=True,
                           return_tensors="pt")
    with torch.no_grad():
        theirs = model(**encoded).logits
    assert max_difference(ours, theirs) <= TOLERANCE


def test_qa_logits_match_xlnet_for_question_answering_simple(xlnet_spiece, tmp_path):
    model, folder = hf_folder(transformers.XLNetForQuestionAnsweringSimple, xlnet_spiece, tmp_path)
    answerer = BertQuestionAnswerer.from_preset(str(folder), sequence_length=64, doc_stride=16,
                                                max_question_length=16)
    ours, prepared = answerer.predict_outputs({"question": QUESTIONS, "context": [CONTEXT] * 2}, verbose=0)
    assert len(prepared.features["token_ids"].row_lengths()) == 2  # one window each: HF reads the same text
    tokenizer = transformers.XLNetTokenizer.from_pretrained(str(folder))
    encoded = tokenizer(QUESTIONS, [CONTEXT] * 2, padding=True, return_token_type_ids=True, return_tensors="pt")
    with torch.no_grad():
        theirs = model(**encoded)
    lengths = encoded["attention_mask"].sum(1).tolist()
    differences = []
    for row, length in enumerate(lengths):  # ours right-padded (dynamic batches), HF's left-padded
        token_ids = prepared.features["token_ids"][row].numpy()
        assert token_ids.tolist() == encoded["input_ids"][row, -length:].tolist()
        for index, name in enumerate(("start_logits", "end_logits")):
            differences.append(max_difference(ours[row, :length, index], getattr(theirs, name)[row, -length:]))
    print(f"QA start/end logits vs XLNetForQuestionAnsweringSimple: max |difference| {max(differences):.2e}")
    assert max(differences) <= TOLERANCE


def test_classifier_fits_saves_and_reloads_on_raw_text(hf_classifier, uci_reviews, tmp_path):
    train, test = uci_reviews
    classifier = BertClassifier.from_preset(str(hf_classifier[1]), sequence_length=48, labels=[0, 1])
    before = keras.ops.convert_to_numpy(classifier.logits_layer.kernel).copy()
    classifier.fit(train.iloc[:8], epochs=3, batch_size=8, verbose=0)  # one batch shape: one trace; warmup is step 0
    assert max_difference(keras.ops.convert_to_numpy(classifier.logits_layer.kernel), before) > 0
    texts = test["text"].tolist()[:6]
    predictions = classifier.predict(texts, verbose=0)
    classifier.save(tmp_path / "xlnet_classifier.keras")
    reloaded = keras.saving.load_model(tmp_path / "xlnet_classifier.keras")
    assert isinstance(reloaded.backbone, XLNetBackbone)
    again = reloaded.predict(texts, verbose=0)
    assert again["label"].tolist() == predictions["label"].tolist()
    assert np.array_equal(np.stack(again["probabilities"]), np.stack(predictions["probabilities"]))


def test_qa_fits_on_answers(xlnet_spiece, tmp_path):
    _, folder = hf_folder(transformers.XLNetForQuestionAnsweringSimple, xlnet_spiece, tmp_path)
    answerer = BertQuestionAnswerer.from_preset(str(folder), sequence_length=48, doc_stride=8,
                                                max_question_length=12)
    data = {"question": QUESTIONS, "context": [CONTEXT] * 2, "answer_texts": [["Mr. Bennet"], ["three-and-twenty"]],
            "answer_starts": [[0], [CONTEXT.index("three-and-twenty")]]}
    prepared = answerer.prepare(data, with_labels=True)
    lengths = prepared.features["token_ids"].row_lengths().numpy()
    assert (prepared.labels < lengths[:, None]).all()
    answerer.fit(data, epochs=1, batch_size=4, verbose=0)
    predicted = answerer.predict({"question": QUESTIONS, "context": [CONTEXT] * 2}, verbose=0)
    assert all(CONTEXT[start:end] == answer for start, end, answer in
               zip(predicted["start"], predicted["end"], predicted["answer"]))


def test_task_models_xlnet_does_not_take_are_refused_by_name(hf_classifier):
    with pytest.raises(ValueError, match="BertTokenClassifier does not take a XLNetBackbone .it takes "
                                         "BertClassifier and BertQuestionAnswerer only"):
        BertTokenClassifier.from_preset(str(hf_classifier[1]))


def test_reading_in_segments_with_memory_equals_hf_fed_the_segments_with_mems(hf_classifier):
    model, folder = hf_classifier
    classifier = BertClassifier.from_preset(str(folder))
    assert classifier.backbone.memory_length == 6  # HF's mem_len
    reader = MemoryReader(classifier, segment_length=8)
    segments = memory_segments(classifier.tokenizer, CONTEXT, 8, first_length=8)  # the memory (6) fits in 8
    assert len(segments) >= 4 and segments[-1]["token_ids"][0, -1] == classifier.tokenizer.cls_token_id
    assert segments[-1]["token_ids"].shape[1] < 8  # ours is padded on the right to 8, HF's is not padded
    ours = reader.predict_documents([CONTEXT])
    mems = None
    with torch.no_grad():
        for segment in segments:
            theirs = model(**{name: torch.tensor(segment[ours_name]).long() for name, ours_name in
                              (("input_ids", "token_ids"), ("token_type_ids", "segment_ids"),
                               ("attention_mask", "padding_mask"))}, mems=mems, use_mems=True)
            mems = theirs.mems
    difference = max_difference(ours[0], theirs.logits[0])
    print(f"{len(segments)} segments through the memory vs XLNetForSequenceClassification with mems: "
          f"max |difference| {difference:.2e}")
    assert difference <= TOLERANCE


def test_memory_reader_trains_the_classifier_on_documents(hf_classifier, uci_reviews):
    train = uci_reviews[0].iloc[:4]
    documents = pd.DataFrame({"text": [" ".join(train["text"][:2]), " ".join(train["text"][2:])],
                              "label": [0, 1]})
    classifier = BertClassifier.from_preset(str(hf_classifier[1]), labels=[0, 1])
    reader = MemoryReader(classifier, segment_length=16)
    before = keras.ops.convert_to_numpy(classifier.backbone.sequence_summary.kernel).copy()
    losses = reader.fit_documents(documents, epochs=1, learning_rate=1e-3)
    assert len(losses) == 1 and np.isfinite(losses[0])
    assert max_difference(keras.ops.convert_to_numpy(classifier.backbone.sequence_summary.kernel), before) > 0
    assert reader.predict_documents(documents["text"]).shape == (2, 2)


def test_memory_reader_needs_a_memory(hf_classifier):
    classifier = BertClassifier.from_preset(str(hf_classifier[1]), backbone_overrides={"memory_length": None})
    with pytest.raises(ValueError, match="memory_length"):
        MemoryReader(classifier, segment_length=8)
