"""Micro-batches bounded by rows and by tokens: requests sent together share a batch until the token budget would
be passed; the request that would pass it starts the next batch, and every request gets its own rows back."""

import asyncio

import pandas as pd

from kerasbert.serving.micro_batching import MicroBatcher


def batches_for(token_counts, max_tokens, max_batch=32):
    """The batches (lists of request numbers) that requests of `token_counts` tokens, sent at once, end in."""
    seen = []

    def predict(frame):
        seen.append(frame["request"].tolist())
        return frame.assign(doubled=frame["request"] * 2)

    async def run():
        batcher = MicroBatcher(predict, max_batch=max_batch, max_wait_ms=50, max_tokens=max_tokens,
                               count_tokens=lambda frame: int(frame["tokens"].sum()))
        task = asyncio.create_task(batcher.run())
        await asyncio.sleep(0)
        frames = [pd.DataFrame({"request": [i], "tokens": [n]}) for i, n in enumerate(token_counts)]
        answers = await asyncio.gather(*(batcher.predict(frame) for frame in frames))
        task.cancel()
        batcher.close()
        return answers

    answers = asyncio.run(run())
    assert [answer["doubled"].tolist() for answer in answers] == [[2 * i] for i in range(len(token_counts))]
    return seen


def test_a_batch_keeps_to_the_token_budget():
    assert batches_for([100] * 6, max_tokens=1000) == [[0, 1, 2, 3, 4, 5]]
    assert batches_for([400, 400, 400, 100, 500], max_tokens=1000) == [[0, 1], [2, 3, 4]]  # up to 1000
    assert batches_for([400, 400, 400, 100, 501], max_tokens=1000) == [[0, 1], [2, 3], [4]]
    assert batches_for([2000, 10, 10], max_tokens=1000) == [[0], [1, 2]]  # larger than the budget: alone
    assert batches_for([10] * 5, max_tokens=None, max_batch=2) == [[0, 1], [2, 3], [4]]


def test_two_workers_predict_two_batches_at_once():
    """With `workers=2` a second batch starts while the first is still being predicted: each batch's predict waits
    for the other at a barrier, which one worker would never pass."""
    import threading

    barrier = threading.Barrier(2, timeout=30)

    def predict(frame):
        barrier.wait()
        return frame.assign(doubled=frame["request"] * 2)

    async def run():
        batcher = MicroBatcher(predict, max_batch=1, max_wait_ms=0, workers=2)
        task = asyncio.create_task(batcher.run())
        await asyncio.sleep(0)
        answers = await asyncio.gather(*(batcher.predict(pd.DataFrame({"request": [i]})) for i in range(4)))
        task.cancel()
        batcher.close()
        return answers

    assert [answer["doubled"].tolist() for answer in asyncio.run(run())] == [[0], [2], [4], [6]]
