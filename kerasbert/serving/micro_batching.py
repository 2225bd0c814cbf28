"""Micro-batching: requests that arrive together are predicted in one batch.

Each request waits at most `max_wait_ms` for others to join it, and a batch holds at most `max_batch`
rows; the model runs in one worker thread, so while it works the next batch gathers. A batch that fails
is predicted request by request, so that one bad request gets its error and the others their answers.

Example:
>>> batcher = MicroBatcher(model.predict, max_batch=32, max_wait_ms=5)
>>> predictions = await batcher.predict(frame)          # inside the server's event loop
"""

import asyncio
import concurrent.futures

import pandas as pd


class MicroBatcher:
    """Gather `predict(frame)` calls into batches of up to `max_batch` rows (see the module docstring)."""

    def __init__(self, predict_frame, max_batch=32, max_wait_ms=5.0):
        self.predict_frame = predict_frame
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000
        self.queue = None
        self.worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kerasbert-predict")
        self.batches = 0

    async def predict(self, frame):
        """The predictions for `frame`'s rows (a DataFrame in the same order), batched with other calls."""
        if self.queue is None:
            raise RuntimeError("The batcher is not running: start it with `await batcher.run()` in a task.")
        answer = asyncio.get_running_loop().create_future()
        await self.queue.put((frame, answer))
        return await answer

    async def run(self):
        """Form and predict batches until cancelled."""
        self.queue = asyncio.Queue()
        while True:
            requests = [await self.queue.get()]
            rows = len(requests[0][0])
            deadline = asyncio.get_running_loop().time() + self.max_wait
            while rows < self.max_batch:
                try:
                    requests.append(self.queue.get_nowait())
                except asyncio.QueueEmpty:
                    remaining = deadline - asyncio.get_running_loop().time()
                    if remaining <= 0:
                        break
                    try:
                        requests.append(await asyncio.wait_for(self.queue.get(), remaining))
                    except TimeoutError:
                        break
                rows += len(requests[-1][0])
            await self.answer(requests)

    async def answer(self, requests):
        loop = asyncio.get_running_loop()
        frames = [frame for frame, _ in requests]
        try:
            combined = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
            predictions = await loop.run_in_executor(self.worker, self.predict_frame, combined)
        except Exception as error:  # noqa: BLE001 - answered per request below
            if len(requests) == 1:
                if not requests[0][1].done():  # a client that went away cancelled its answer
                    requests[0][1].set_exception(error)
                return
            for request in requests:
                await self.answer([request])
            return
        self.batches += 1
        start = 0
        for frame, answer in requests:
            if not answer.done():
                answer.set_result(predictions.iloc[start:start + len(frame)].reset_index(drop=True))
            start += len(frame)

    def close(self):
        self.worker.shutdown(wait=False, cancel_futures=True)
