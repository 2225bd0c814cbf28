"""Micro-batching: requests that arrive together are predicted in one batch.

A batch holds at most `max_batch` rows and, with `max_tokens` (and `count_tokens`, a request's tokens), at most
that many tokens: a request that would pass the budget starts the next batch (one request larger than the budget
runs alone). When the model is idle, a request waits at most `max_wait_ms` for
others to join it; while the model works (in `workers` threads, each predicting one batch), the next batch gathers
until a thread is free, and starts before the finished batch's rows are handed out (the model does not wait
for the answers to be written).
A batch that fails is predicted request by request, so that one bad request gets its error and the others
their answers.

Examples:
    >>> batcher = MicroBatcher(model.predict, max_batch=32, max_wait_ms=5)
    >>> predictions = await batcher.predict(frame)          # inside the server's event loop
"""

import asyncio
import concurrent.futures

import pandas as pd


class MicroBatcher:
    """Gather `predict(frame)` calls into batches of up to `max_batch` rows and `max_tokens` tokens (see the
    module docstring)."""

    def __init__(self, predict_frame, max_batch=32, max_wait_ms=5.0, observe_batch=None, max_tokens=None,
                 count_tokens=None, workers=1):
        self.workers = workers
        self.predict_frame = predict_frame
        self.observe_batch = observe_batch  # called with (rows, each request's wait in seconds) as a batch starts
        self.max_batch, self.max_tokens, self.count_tokens = max_batch, max_tokens, count_tokens
        self.held = None  # a request taken from the queue that did not fit the token budget: it starts the next batch
        self.max_wait = max_wait_ms / 1000
        self.queue = None
        self.worker = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kerasbert-predict")
        self.batches = 0

    async def predict(self, frame, tokens=None):
        """The predictions for `frame`'s rows (a DataFrame in the same order), batched with other calls; `tokens`:
        the frame's tokens where the caller counted them already (else `count_tokens` counts them)."""
        if self.queue is None:
            raise RuntimeError("The batcher is not running: start it with `await batcher.run()` in a task.")
        loop = asyncio.get_running_loop()
        answer = loop.create_future()
        if tokens is None:
            tokens = self.count_tokens(frame) if self.max_tokens is not None else 0
        await self.queue.put((frame, answer, loop.time(), tokens))
        return await answer

    async def run(self):
        """Form and predict batches until cancelled."""
        self.queue = asyncio.Queue()
        running = set()  # the predictions in the workers
        delivering = set()  # the tasks handing each batch's rows to its requests
        while True:
            requests = await self.gather(running)
            prediction = self.submit(requests)
            running.add(prediction)
            prediction.add_done_callback(running.discard)
            delivery = asyncio.create_task(self.deliver(requests, prediction))
            delivering.add(delivery)
            delivery.add_done_callback(delivering.discard)

    async def gather(self, running):
        """The next batch: requests that come within `max_wait` of the first, and while every worker is busy
        predicting a batch of `running`, every request that comes until one is free, up to `max_batch` rows.
        So the model never idles while requests wait, and requests that come during a prediction share
        the next one."""
        loop = asyncio.get_running_loop()
        requests = [self.held or await self.queue.get()]
        self.held = None
        rows, tokens = len(requests[0][0]), requests[0][3]
        deadline = loop.time() + self.max_wait
        getter = None
        try:
            while rows < self.max_batch:
                busy = len(running) >= self.workers
                remaining = deadline - loop.time()
                if remaining <= 0 and not busy:
                    break
                getter = getter or asyncio.ensure_future(self.queue.get())
                waiting = {getter, *running} if busy else {getter}
                done, _ = await asyncio.wait(waiting, timeout=None if busy else remaining,
                                             return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    request, getter = getter.result(), None
                    if self.passes_budget(tokens, request):
                        self.held = request
                        break
                    requests.append(request)
                    rows, tokens = rows + len(request[0]), tokens + request[3]
                elif not busy:  # the wait timed out
                    break
        finally:
            if getter is not None:
                if getter.done() and not getter.cancelled():
                    request = getter.result()
                    if self.passes_budget(tokens, request):
                        self.held = request
                    else:
                        requests.append(request)
                else:
                    getter.cancel()
        return requests

    def passes_budget(self, tokens, request):
        """Whether `request` would take a batch of `tokens` tokens past `max_tokens`."""
        return self.max_tokens is not None and tokens + request[3] > self.max_tokens

    def submit(self, requests):
        """Start predicting `requests` in a worker (a future of their predictions)."""
        loop = asyncio.get_running_loop()
        frames = [frame for frame, *_ in requests]
        if self.observe_batch is not None:
            waits = [loop.time() - queued for _, _, queued, _ in requests]
            self.observe_batch(sum(len(frame) for frame in frames), waits)
        return loop.run_in_executor(self.worker, self.predict_frames, frames)

    def predict_frames(self, frames):
        return self.predict_frame(pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0])

    async def deliver(self, requests, prediction):
        """Each request's rows of `prediction`; a batch that failed is predicted again request by request."""
        try:
            predictions = await prediction
        except Exception as error:  # noqa: BLE001 - answered per request below
            if len(requests) == 1:
                if not requests[0][1].done():  # a client that went away cancelled its answer
                    requests[0][1].set_exception(error)
                return
            for request in requests:
                await self.deliver([request], self.submit([request]))
            return
        self.batches += 1
        await asyncio.sleep(0)  # the gatherer, woken by the same prediction, starts the next batch first
        start = 0
        for frame, answer, *_ in requests:
            if not answer.done():
                answer.set_result(predictions.iloc[start:start + len(frame)].reset_index(drop=True))
            start += len(frame)

    def close(self):
        self.worker.shutdown(wait=False, cancel_futures=True)
