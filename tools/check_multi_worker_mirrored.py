"""Does Keras 3's `fit` train under TensorFlow's `MultiWorkerMirroredStrategy`? Two worker processes on
localhost fit a one-layer model (no kerasbert code involved) and print their losses or the error.

Found with Keras 3.15.1 and TensorFlow 2.21.0: both workers join (2 replicas in sync), then `fit` fails with
`ValueError: Attempt to convert a value (PerReplica:{...}) ... to a Tensor`, so kerasbert supports several
processes on the JAX backend only (docs/guides/fine-tuning.md, "Several processes").

Run: `.venv/bin/python tools/check_multi_worker_mirrored.py` (about 30 s).
"""

import json
import os
import subprocess
import sys

PORTS = (23456, 23457)


def worker(index):
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": [f"localhost:{port}" for port in PORTS]},
                                          "task": {"type": "worker", "index": index}})
    os.environ["KERAS_BACKEND"] = "tensorflow"
    import keras
    import numpy as np
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    features = np.random.default_rng(0).normal(size=(64, 8)).astype("float32")
    labels = (features[:, 0] > 0).astype("int32")
    with strategy.scope():
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    try:
        history = model.fit(tf.data.Dataset.from_tensor_slices((features, labels)).batch(16), epochs=2, verbose=0)
        print(f"worker {index}: {strategy.num_replicas_in_sync} replicas, losses {history.history['loss']}")
    except Exception as error:  # the finding is the error itself
        print(f"worker {index}: {strategy.num_replicas_in_sync} replicas joined, fit failed: "
              f"{type(error).__name__}: {str(error).splitlines()[0]}")


def main():
    workers = [subprocess.Popen([sys.executable, __file__, str(index)], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True) for index in range(len(PORTS))]
    for process in workers:
        output, _ = process.communicate(timeout=300)
        print(output.strip())


if __name__ == "__main__":
    worker(int(sys.argv[1])) if len(sys.argv) > 1 else main()
