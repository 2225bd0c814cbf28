"""Checks for data-parallel training: every batch should split evenly over the devices.

`keras.distribution.DataParallel` and `ModelParallel` (JAX) cut each batch into equal pieces along
the mesh's batch axis; JAX cannot place a batch of 7 on 2 devices, so such a batch is an error,
found before training starts. A `tf.distribute` strategy (MirroredStrategy, TPUStrategy) splits it
4 + 3, but its loss is then the mean of the replicas' means, not of the 7 examples: a step unlike
one device's on the same batch, so it gets a warning.

Examples:
    >>> keras.distribution.set_distribution(keras.distribution.DataParallel())
    >>> batch_shards()  # 2 on two devices
    2
    >>> check_batches_split_evenly(31, 8)  # ValueError: batch 3 of the training data has 7 examples
"""

import contextlib
import warnings

import keras

from kerasbert.arguments import check_count
from kerasbert.training.cpu_features import warn_if_bfloat16_is_slow_here


def batch_shards():
    """How many pieces the active Keras distribution cuts each batch into (1 without one)."""
    distribution = keras.distribution.distribution()
    if distribution is None or distribution.batch_dim_name is None:
        return 1
    mesh = distribution.device_mesh
    return mesh.shape[mesh.axis_names.index(distribution.batch_dim_name)]


def process_share():
    """`(processes, this process's index)` of a multi-process run (JAX after `keras.distribution.initialize`,
    torch after `torch.distributed.init_process_group`); `(1, 0)` in a single process. Each process reads its
    own share of a streamed corpus.

    Examples:
        >>> process_share()
        (1, 0)
    """
    if keras.backend.backend() == "jax":
        import jax

        return jax.process_count(), jax.process_index()
    if keras.backend.backend() == "torch":
        import torch.distributed

        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return torch.distributed.get_world_size(), torch.distributed.get_rank()
    return 1, 0


def join_processes(coordinator, num_processes, process_id, timeout=120):
    """Join a data-parallel run of `num_processes` processes (JAX backend: `jax.distributed`, gloo collectives on
    CPU; one per host, or per GPU), then train data-parallel over every process's devices
    (`keras.distribution.DataParallel`). Process 0 serves as coordinator at `coordinator` ("host:port", reachable
    from every process). Bad settings are named errors: a process id out of range, another backend, a
    coordinator that does not answer within `timeout` seconds.

    Examples:
        >>> join_processes("10.0.0.1:1234", num_processes=2, process_id=0)   # on host 10.0.0.1
        >>> join_processes("10.0.0.1:1234", num_processes=2, process_id=1)   # on the other host
    """
    check_count("num_processes", num_processes)
    check_count("process_id", process_id, 0, num_processes - 1, hint=f" Processes are numbered 0 to {num_processes - 1}.")
    check_count("timeout", timeout)
    host, _, port = str(coordinator).rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"coordinator must be host:port (process 0's address), got {coordinator!r}.")
    if keras.backend.backend() != "jax":
        raise ValueError(f"Several processes train on the JAX backend (KERAS_BACKEND=jax); this is "
                         f"{keras.backend.backend()}. Keras {keras.__version__} has no multi-process torch "
                         "distribution, and TensorFlow's MultiWorkerMirroredStrategy is not supported by kerasbert.")
    import jax

    if jax.default_backend() == "cpu":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(coordinator, num_processes, process_id, initialization_timeout=timeout)
    except Exception as error:  # noqa: BLE001 - jax raises its runtime's errors; each becomes one named error
        raise RuntimeError(f"Process {process_id} of {num_processes} could not join the run at {coordinator} within "
                           f"{timeout} s ({str(error).splitlines()[0][:200]}). Start process 0 on that host and "
                           "port, and check that every process can reach it.") from None
    keras.distribution.set_distribution(keras.distribution.DataParallel())


def process_batch_size(batch_size):
    """A global `batch_size`'s share of each process (refused unless the processes divide it).

    Examples:
        >>> process_batch_size(256)  # 2 processes
        128
    """
    processes, _ = process_share()
    if batch_size % processes:
        raise ValueError(f"batch_size={batch_size} is the global batch of {processes} processes, which must divide "
                         f"it: use a multiple of {processes}.")
    return batch_size // processes


def this_process_rows(dataset):
    """Each batch of `dataset` (the global batch, built alike in every process from the same data and seed) cut to
    this process's equal share of its rows, in process order; the dataset unchanged in a single process. The
    batch was padded whole, so every process's share has the same shape, as JAX's global arrays need.

    Examples:
        >>> local = this_process_rows(global_batches)  # process 1 of 2: rows 4-7 of each batch of 8
    """
    import tensorflow as tf

    processes, index = process_share()
    if processes == 1:
        return dataset

    def share(*parts):
        rows = tf.shape(tf.nest.flatten(parts)[0])[0] // processes
        cut = tf.nest.map_structure(lambda tensor: tensor[index * rows:(index + 1) * rows], parts)
        return cut if len(cut) > 1 else cut[0]

    return dataset.map(share)


@contextlib.contextmanager
def batches_already_per_process():
    """Keras' fit without its own per-process sharding of a dataset (`auto_shard_dataset`), for data that
    `this_process_rows` or a per-process stream has sharded already."""
    distribution = keras.distribution.distribution()
    if distribution is None or process_share()[0] == 1 or not getattr(distribution, "auto_shard_dataset", False):
        yield
        return
    distribution.auto_shard_dataset = False
    try:
        yield
    finally:
        distribution.auto_shard_dataset = True


def tf_distribute_replicas(model):
    """Replicas of the `tf.distribute` strategy `model` was built under (1: none, or not TensorFlow)."""
    if keras.backend.backend() != "tensorflow":
        return 1
    return model.distribute_strategy.num_replicas_in_sync


def check_batches_split_evenly(rows, batch_size, what="the training data", model=None):
    """For the first batch of `rows` examples in batches of `batch_size` (the last one holds the
    remainder) that does not split over the devices: a ValueError under a `keras.distribution`, a
    warning under the `tf.distribute` strategy of `model`."""
    shards = batch_shards()
    strict = shards > 1
    if not strict and model is not None:
        shards = tf_distribute_replicas(model)
    if shards == 1:
        return
    for index, size in enumerate(batch_sizes(rows, batch_size)):
        if size % shards:
            problem = (f"Batch {index} of {what} has {size} examples ({rows} in batches of {batch_size}), "
                       f"which does not split evenly over the {shards} devices")
            fix = (f"Make every batch a multiple of {shards}: a batch_size that is, and a number of "
                   f"examples that is (drop {size % shards} or add {shards - size % shards}).")
            if strict:
                raise ValueError(f"{problem} of the active {type(keras.distribution.distribution()).__name__} "
                                 f"distribution. {fix}")
            warnings.warn(f"{problem} of the tf.distribute strategy: its loss will be the mean of the "
                          f"replicas' means, not of its examples (a step unlike one device's). {fix}",
                          stacklevel=4)
            return


def check_dataset_splits_evenly(dataset, what="the training data"):
    """The same for a `tf.data.Dataset` whose batch size is static (batched with
    `drop_remainder=True`); a dynamic batch size is checked by JAX at the first step instead,
    because reading the dataset here would advance its shuffling."""
    import tensorflow as tf

    shards = batch_shards()
    size = tf.nest.flatten(dataset.element_spec)[0].shape[0]
    if size is not None and size % shards:
        check_batches_split_evenly(size, size, what)


def batch_sizes(rows, batch_size):
    """Examples per batch: `batch_size` each, then the remainder.

    >>> batch_sizes(31, 8)
    [8, 8, 8, 7]
    """
    return [batch_size] * (rows // batch_size) + ([rows % batch_size] if rows % batch_size else [])


def rows_of(x):
    """Examples in Keras-level array data (a dict of arrays or an array)."""
    first = next(iter(x.values())) if isinstance(x, dict) else x
    return int(first.shape[0]) if hasattr(first, "shape") else len(first)


def has_accelerator():
    """Whether the Keras backend sees a GPU or TPU (on torch: CUDA or Apple MPS)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return bool(tf.config.list_physical_devices("GPU") or tf.config.list_physical_devices("TPU"))
    if backend == "jax":
        import jax

        return any(device.platform != "cpu" for device in jax.devices())
    if backend == "torch":
        import torch

        return torch.cuda.is_available() or torch.backends.mps.is_available()
    return False


def check_dtype_fits_the_device(dtype):
    """ValueError for a float16 compute dtype (`"float16"`, `"mixed_float16"`) without a GPU or TPU; a warning (once)
    for bfloat16 on a CPU without bf16 products (`warn_if_bfloat16_is_slow_here`).

    The CPU kernels of these backends have no fast float16 matrix arithmetic, and on the CPU
    `"float16"` training failed inside TensorFlow's optimizer and gave NaN losses on JAX and torch,
    so a CPU run is refused rather than left to fail or crawl. bfloat16 is the CPU's reduced
    precision.
    """
    policy = keras.dtype_policies.get(dtype) if dtype is not None else keras.config.dtype_policy()
    if policy.compute_dtype not in ("float16", "bfloat16") or has_accelerator():
        return
    if policy.compute_dtype == "float16":
        raise ValueError(
            f"dtype={policy.name!r} needs a GPU or TPU, and the {keras.backend.backend()} backend sees "
            f"none, and its CPU kernels have no fast float16 arithmetic. Use dtype='mixed_bfloat16' (fast on CPUs with "
            f"AVX512-BF16 or AMX) or the default float32."
        )
    warn_if_bfloat16_is_slow_here(policy)


def check_weights_are_trainable(model):
    """ValueError for float16 weights (`dtype="float16"`): AdamW's epsilon (1e-8) and small second
    moments underflow in float16, so the first update divides by zero (NaN losses). Mixed precision
    keeps float32 weights."""
    if any(variable.trainable and variable.dtype == "float16" for variable in model.weights):
        raise ValueError("This model's weights are float16, which AdamW cannot train (its updates "
                         "underflow to NaN). Build it with dtype='mixed_float16' (float32 weights, "
                         "float16 compute) to fine-tune.")
