"""Pre-training from shards as a stream: a run stopped mid-way and started again with the same `backup_dir` reads
the batches it had not trained on yet (the data position is saved with the weights) and ends with the weights of a
run never stopped. (A kill with SIGKILL leaves the same backup: tests/training/test_resume.py.)"""

import json

import keras
import numpy as np
import pytest

from kerasbert.data.pretraining_shards import prepare_pretraining
from kerasbert.data.shipped import load_dataset
from kerasbert.families import BertTokenizer
from kerasbert.tasks import BertPretrainer
from tests.training.at_batch import AtBatch


class Stopped(Exception):
    pass


def stop():
    raise Stopped


@pytest.fixture(scope="module")
def austen_shards(tmp_path_factory):
    """Twelve Jane Austen chapters, one file each, as shards."""
    folder = tmp_path_factory.mktemp("austen")
    chapters = load_dataset("jane_austen", "train").groupby(["book", "chapter"], sort=False)["text"].agg("\n".join)
    for index, chapter in enumerate(chapters.tolist()[:12]):
        (folder / f"chapter{index:02d}.txt").write_text(chapter, encoding="utf-8")
    prepare_pretraining(folder, folder / "shards", BertTokenizer.from_preset("all_minilm_l6_v2_en"), num_workers=1)
    return folder / "shards"


def pretrain(tiny_preset, shards, backup_dir, callbacks=()):
    """Three epochs of three batches on the stream, dropout on; the weights and the optimizer's step count."""
    keras.utils.set_random_seed(0)
    pretrainer = BertPretrainer.from_preset(tiny_preset, max_sequence_length=32)
    pretrainer.fit(shards, batch_size=4, epochs=3, steps_per_epoch=3, learning_rate=1e-3, backup_dir=backup_dir,
                   callbacks=list(callbacks), verbose=0)
    return [np.array(weight) for weight in pretrainer.weights], int(pretrainer.optimizer.iterations)


def test_a_stopped_run_continues_at_its_batch_and_ends_with_the_uninterrupted_weights(tiny_preset, austen_shards,
                                                                                     tmp_path):
    backup = tmp_path / "backup"
    with pytest.raises(Stopped):
        pretrain(tiny_preset, austen_shards, backup, [AtBatch(epoch=1, batch=1, action=stop)])
    assert json.loads((backup / "epoch-0001" / "state.json").read_text()) == {"epochs_done": 1, "batches_read": 3}
    resumed, resumed_steps = pretrain(tiny_preset, austen_shards, backup)
    straight, straight_steps = pretrain(tiny_preset, austen_shards, tmp_path / "straight")
    assert resumed_steps == straight_steps == 9
    for ours, theirs in zip(resumed, straight):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    # The position matters: from its beginning the stream gives other batches than from batch 3.
    pretrainer = BertPretrainer.from_preset(tiny_preset, max_sequence_length=32)
    from_start, from_three = (next(iter(pretrainer.pretraining_dataset(austen_shards, 4, start=start)))
                              for start in (0, 3))
    assert not np.array_equal(from_start[0]["token_ids"], from_three[0]["token_ids"])
