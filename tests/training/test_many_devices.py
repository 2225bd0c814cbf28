"""Training on several devices with existing engines, on 2 CPU devices of this machine:
`keras.distribution.DataParallel` and `ModelParallel` on JAX (2 XLA host devices) and
`tf.distribute.MirroredStrategy` on TensorFlow (2 logical CPUs). Each runs in a fresh process, since
the device count is fixed when the framework starts.

Same global batch, same weights, same data order: the losses equal one device's to float tolerance.
Dropout is off in the equal-loss runs: each replica draws its own masks, so with dropout the runs
agree in distribution only.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]

COMMON = textwrap.dedent("""
    import json, os, sys, warnings
    import keras, numpy as np, pandas as pd
    import kerasbert as kb
    from kerasbert.data.shipped import load_dataset

    PRE = kb.BertPreprocessor.from_preset("all_minilm_l6_v2_en", sequence_length=32)
    train = load_dataset("uci_sentiment", "train").head(400)
    # 9 to 16 ids with [CLS] and [SEP]: every batch pads to the one length bucket 16, so JAX compiles once a model
    tokens = PRE.tokenizer(train["text"].tolist()).row_lengths().numpy() + 2
    short = train[(tokens > 8) & (tokens <= 16)]
    REVIEWS = pd.concat([short[short["label"] == 0].head(16), short[short["label"] == 1].head(16)])

    def classifier(**backbone):
        keras.utils.set_random_seed(0)
        config = dict(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=32, intermediate_dim=64,
                      max_sequence_length=64, dropout=0.0, attention_dropout=0.0)
        return kb.BertClassifier(kb.BertBackbone(**{**config, **backbone}), PRE, num_classes=2, dropout=0.0)

    def losses(model, data=REVIEWS, batch_size=8):
        model.load_weights(WEIGHTS)
        return model.fit(data, epochs=2, batch_size=batch_size, learning_rate=2e-3, verbose=0).history["loss"]

    WEIGHTS = sys.argv[1] + "/start.weights.h5"
    classifier().save_weights(WEIGHTS)
    RESULTS = {}
""")


def run_in_fresh_process(script, tmp_path, prelude="", fresh_python=None, **env):
    """Run prelude + COMMON + script with `env`; return the JSON it leaves in RESULTS. With `fresh_python`
    (TensorFlow only), in a child of its TensorFlow-backend kerasbert server, the prelude setting `sys.argv`."""
    script = textwrap.dedent(prelude) + COMMON + textwrap.dedent(script) + "\njson.dump(RESULTS, open(sys.argv[1] + '/results.json', 'w'))\n"
    if fresh_python is not None:
        if os.environ.get("KERAS_BACKEND", "tensorflow") != "tensorflow":
            env = {"KERAS_BACKEND": "tensorflow", **env}
        fresh_python(script, env=env or None)  # no env under `make test`: the reload tests' server
        return json.loads((tmp_path / "results.json").read_text())
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env})
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((tmp_path / "results.json").read_text())


# Two CPU devices; XLA gives up on a collective when one device is 40 s late, which a loaded 2-core CI machine
# (the other pytest worker busy) has reached: allow 10 minutes.
# XLA's own optimisation levels here (not `make test`'s faster-compiling XLA_FLAGS, which these flags replace): a CI run
# with both saw the two devices' all-reduce never meet.
JAX_TWO_DEVICES = {"KERAS_BACKEND": "jax", "XLA_FLAGS": "--xla_force_host_platform_device_count=2 "
                                                        "--xla_cpu_collective_call_terminate_timeout_seconds=600"}


@pytest.fixture(scope="module")
def jax_two_devices(tmp_path_factory, minilm_path):
    """DataParallel then ModelParallel on 2 JAX host devices, in one fresh process (one start-up for both)."""
    data_parallel = """
        DATA = RESULTS["data"] = {}
        DATA["devices"] = len(keras.distribution.list_devices())
        one = classifier()
        DATA["one"] = losses(one)
        DATA["one_probabilities"] = np.stack(one.predict(REVIEWS.head(31), verbose=0)["probabilities"]).tolist()
        keras.distribution.set_distribution(keras.distribution.DataParallel())
        two = classifier()
        DATA["sharding"] = list(two.backbone.weights[0].value.sharding.spec)
        DATA["two"] = losses(two)
        # 31 rows: predicting splits what it can and runs the rest whole
        DATA["two_probabilities"] = np.stack(two.predict(REVIEWS.head(31), verbose=0)["probabilities"]).tolist()
        try:
            losses(two, REVIEWS.head(31))
        except ValueError as error:
            DATA["uneven"] = str(error)
        keras.distribution.set_distribution(None)
    """
    model_parallel = f"""
        MODEL = RESULTS["model"] = {{}}
        mesh = keras.distribution.DeviceMesh((1, 2), ("batch", "model"), keras.distribution.list_devices())
        parallel = keras.distribution.ModelParallel(layout_map=kb.BertBackbone.get_layout_map(mesh),
                                                    batch_dim_name="batch")
        inputs = PRE(["The battery lasts all day.", "Not what I expected, sadly."])
        single = kb.BertBackbone.from_preset({str(minilm_path)!r})
        with parallel.scope():
            sharded = kb.BertBackbone.from_preset({str(minilm_path)!r})
            tiny = classifier()
        MODEL["two"] = losses(tiny)  # against the one-device run above: same weights, same batches
        MODEL["max_difference"] = float(np.abs(keras.ops.convert_to_numpy(sharded(inputs)["sequence_output"])
                                                 - keras.ops.convert_to_numpy(single(inputs)["sequence_output"])).max())
        MODEL["specs"] = {{v.path: list(v.value.sharding.spec) for v in sharded.weights}}
        errors = []
        for config in (dict(hidden_dim=27, num_heads=3), ):
            with parallel.scope():
                try:
                    classifier(**config)
                except ValueError as error:
                    errors.append(str(error))
        wrong_rank = keras.distribution.LayoutMap(mesh)
        wrong_rank[".*qkv_dense/bias"] = ("batch", "model")
        other_model = keras.distribution.LayoutMap(mesh)
        other_model["decoder_block.*ffw_gating.kernel"] = ("batch", "model")
        for layout_map in (wrong_rank, other_model):
            with keras.distribution.ModelParallel(layout_map=layout_map, batch_dim_name="batch").scope():
                try:
                    classifier()
                except ValueError as error:
                    errors.append(str(error))
        MODEL["errors"] = errors
    """
    return run_in_fresh_process(textwrap.dedent(data_parallel) + textwrap.dedent(model_parallel),
                                tmp_path_factory.mktemp("jax"), **JAX_TWO_DEVICES)


def test_jax_data_parallel_takes_the_one_device_steps(jax_two_devices):
    results = jax_two_devices["data"]
    assert results["devices"] == 2 and results["sharding"] == [None, None]  # replicated
    np.testing.assert_allclose(results["two"], results["one"], rtol=1e-5)
    assert results["one"][-1] < results["one"][0]
    np.testing.assert_allclose(results["two_probabilities"], results["one_probabilities"], atol=1e-5)
    assert "Batch 3 of the training data has 7 examples (31 in batches of 8)" in results["uneven"]
    assert "drop 1 or add 1" in results["uneven"]


def test_jax_model_parallel_layout_shards_the_real_backbone_and_trains_alike(jax_two_devices):
    results = jax_two_devices["model"]
    specs = results["specs"]
    assert specs["encoder_block_5/attention/qkv_dense/kernel"] == ["batch", "model"]
    assert specs["encoder_block_5/output_dense/kernel"] == ["model", "batch"]
    assert specs["embedding/token_embedding/embeddings"] == [None, "model"]
    assert specs["pooler/kernel"] == [None, None]
    assert results["max_difference"] < 1e-4  # sharded matmuls sum in another order (measured 2.1e-5)
    np.testing.assert_allclose(results["two"], jax_two_devices["data"]["one"], rtol=1e-5)
    split, rank, foreign = results["errors"]
    assert "embedding/token_embedding/embeddings (shape (30522, 27))" in split and "do not divide" in split
    assert "qkv_dense/bias (shape (96,))" in rank and "rank 2" in rank
    assert "made for another model" in foreign and "get_layout_map" in foreign


def test_mirrored_strategy_takes_the_one_device_steps(tmp_path, fresh_python):
    # A child of the fresh_python server: it imported kerasbert (so TensorFlow) but started no TensorFlow
    # runtime, so the devices can still be set, as in a new `python -c`.
    two_logical_cpus = f"""
        import sys
        sys.argv = ["-c", {str(tmp_path)!r}]
        import tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    """
    results = run_in_fresh_process("""
        RESULTS["one"] = losses(classifier())
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        with strategy.scope():
            two = classifier()
        RESULTS["replicas"] = two.distribute_strategy.num_replicas_in_sync
        RESULTS["two"] = losses(two)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses(two, REVIEWS.head(31))
        RESULTS["uneven"] = [str(w.message) for w in caught if "split evenly" in str(w.message)]
    """, tmp_path, prelude=two_logical_cpus, fresh_python=fresh_python)
    assert results["replicas"] == 2
    np.testing.assert_allclose(results["two"], results["one"], rtol=1e-5)
    assert results["one"][-1] < results["one"][0]
    assert len(results["uneven"]) == 1 and "mean of the replicas' means" in results["uneven"][0]


@pytest.mark.all_backends
def test_float16_is_refused_without_a_gpu_and_float16_weights_are_not_trained():
    import kerasbert as kb
    from kerasbert.training.distribution import has_accelerator

    size = dict(vocabulary_size=64, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16)
    for dtype in ("float16", "mixed_float16"):
        if has_accelerator():
            kb.BertBackbone(**size, dtype=dtype)
        else:
            with pytest.raises(ValueError, match=f"dtype='{dtype}' needs a GPU or TPU.*mixed_bfloat16"):
                kb.BertBackbone(**size, dtype=dtype)
    backbone = kb.BertBackbone(**size, dtype="mixed_bfloat16")  # the CPU's alternative
    assert backbone.weights[0].dtype == "float32"
    classifier = kb.BertClassifier(backbone, None, num_classes=2)
    for weight in classifier.weights:  # what dtype="float16" gives on a GPU
        weight._dtype = "float16"
    with pytest.raises(ValueError, match="weights are float16.*mixed_float16"):
        classifier.fit({"token_ids": np.ones((2, 4), "int32")}, np.zeros(2, "int32"), verbose=0)
