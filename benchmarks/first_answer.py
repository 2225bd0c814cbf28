"""Cold start: from a saved classifier on disk to its first answer, in a fresh process, for each runtime.

The same weights (all-MiniLM-L6-v2 fine-tuned on UCI sentiment by `deployment.py`, under runs/deployment/) are
loaded as a kerasbert `.keras` file (`keras.saving.load_model`, TensorFlow), as keras-hub's `BertTextClassifier`
and as HF's `BertForSequenceClassification` (torch, eager). Per runtime, seconds to load, then to answer one text,
then 32 UCI reviews (other lengths: the Keras runtimes may trace again), then a text again (steady state);
imports are done before the clock starts. What a server's first request or a notebook's first `predict` waits.

Run:
    .venv/bin/python benchmarks/first_answer.py [--repeats 3]
"""

import argparse
import importlib
import sys
import time

from _timing import emit, markdown_table, median, run_worker
from deployment import RUNS, SEQUENCE_LENGTH, hf_logits, hf_tokenizer
from run_all import header

PRESET = "all_minilm_l6_v2_en"
TEXT = ["The battery died after an hour."]


def loaders():
    """runtime -> a function loading the model and returning (answer one text, answer 32 reviews)."""
    from kerasbert.data.shipped import load_dataset

    reviews = load_dataset("uci_sentiment", "test")["text"].tolist()[:32]

    def kerasbert():
        import keras

        model = keras.saving.load_model(RUNS / PRESET / "float32.keras")
        return (lambda: model.predict(TEXT, verbose=0), lambda: model.predict(reviews, verbose=0))

    def keras_hub():
        import keras_hub

        folder = str(RUNS / PRESET / "hf")
        preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(folder,
                                                                                     sequence_length=SEQUENCE_LENGTH)
        model = keras_hub.models.BertTextClassifier.from_preset(folder, num_classes=2, preprocessor=preprocessor)
        return (lambda: model.predict(TEXT, verbose=0), lambda: model.predict(reviews, verbose=0))

    def hf():
        import transformers

        model = transformers.BertForSequenceClassification.from_pretrained(str(RUNS / PRESET / "hf")).eval()
        tokenizer = hf_tokenizer(RUNS / PRESET / "hf")
        return (lambda: hf_logits(model, TEXT, tokenizer), lambda: hf_logits(model, reviews, tokenizer))

    return {"kerasbert": kerasbert, "keras-hub": keras_hub, "HF transformers": hf}


IMPORTS = {"kerasbert": "kerasbert", "keras-hub": "keras_hub", "HF transformers": "transformers"}


def worker(runtime):
    importlib.import_module(IMPORTS[runtime])  # import time is not counted (`import_time.py` measures it)
    seconds = {}
    start = time.perf_counter()
    text, reviews = loaders()[runtime]()
    for name, answer in (("load", None), ("first text", text), ("32 reviews", reviews), ("text again", text)):
        if answer is not None:
            answer()
        seconds[name], start = time.perf_counter() - start, time.perf_counter()
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes per runtime (the median is shown)")
    parser.add_argument("--worker", metavar="RUNTIME")
    args = parser.parse_args()
    if args.worker:
        return emit(worker(args.worker))
    print(header("benchmarks/first_answer.py " + " ".join(sys.argv[1:])), flush=True)
    run_worker("deployment.py", "--prepare", PRESET, keras_backend="torch")
    rows = []
    for runtime in loaders():
        runs = [run_worker("first_answer.py", "--worker", runtime, keras_backend="tensorflow")
                for _ in range(args.repeats)]
        rows.append([runtime, *[f"{median([run[step] for run in runs]):.3f}" for step in runs[0]]])
    print(markdown_table(["runtime", "load s", "first text s", "32 reviews s", "text again s"], rows))


if __name__ == "__main__":
    main()
