"""One process of a data-parallel run on the JAX backend, for test_multi_process.py:
`python multi_process_script.py TASK PRESET OUT PROCESSES PROCESS_ID PORT`. With PROCESSES > 1 it joins the others
through `keras.distribution.initialize` (gloo collectives on CPU); every process fits on the same data and seed and
trains on its rows of each global batch. TASK: "classifier" or "pretrainer". Dropout is off."""

import json
import os
import sys

os.environ["KERAS_BACKEND"] = "jax"
import jax  # noqa: E402

jax.config.update("jax_cpu_collectives_implementation", "gloo")
import keras  # noqa: E402
import numpy as np  # noqa: E402

task, preset, output, processes, process_id, port = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:7])
if processes > 1:
    keras.distribution.initialize(job_addresses=f"localhost:{port}", num_processes=processes, process_id=process_id)
keras.distribution.set_distribution(keras.distribution.DataParallel())

from kerasbert.data.shipped import load_dataset  # noqa: E402
from kerasbert.tasks import BertClassifier, BertPretrainer  # noqa: E402

NO_DROPOUT = {"dropout": 0.0, "attention_dropout": 0.0}
keras.utils.set_random_seed(0)
if task == "classifier":
    model = BertClassifier.from_preset(preset, sequence_length=32, num_classes=2, dropout=0.0,
                                       backbone_overrides=NO_DROPOUT)
    data = load_dataset("uci_sentiment", "train").iloc[:32][["text", "label"]]
else:
    model = BertPretrainer.from_preset(preset, max_sequence_length=32, backbone_overrides=NO_DROPOUT)
    # Four chapters make 164 examples at 32 tokens: every batch (the last of 4) splits over the two processes.
    data = load_dataset("jane_austen", "train").groupby(["book", "chapter"], sort=False)["text"].agg("\n".join)[:4]
history = model.fit(data, batch_size=8, epochs=2, learning_rate=1e-3, verbose=0)
if process_id == 0:
    np.savez(output, *[keras.ops.convert_to_numpy(weight) for weight in model.weights])
    with open(output + ".json", "w") as file:
        json.dump(history.history, file)
