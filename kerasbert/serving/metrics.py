"""Prometheus metrics of a kerasbert server, on `GET /metrics` in Prometheus' text format: requests by route and
status, request latency, micro-batch sizes (rows) and the time requests wait for their batch.

Each app has its own registry (several apps in one process do not mix their counts); routes the app does not
serve count as "other", so that requests to made-up paths cannot grow the series without bound.

Examples:
    >>> metrics = ServerMetrics(routes={"/predict", "/health"})
    >>> app.add_middleware(MetricsMiddleware, metrics=metrics)   # metrics.endpoint serves GET /metrics
"""

import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.responses import Response

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
ROW_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


class ServerMetrics:
    """The counters and histograms of one app (see the module docstring)."""

    def __init__(self, routes):
        self.routes = set(routes)
        self.registry = CollectorRegistry()
        self.requests = Counter("kerasbert_requests", "HTTP requests answered, by route and status code.",
                                ["route", "status"], registry=self.registry)
        self.latency = Histogram("kerasbert_request_duration_seconds", "Time to answer a request, by route.",
                                 ["route"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.batch_rows = Histogram("kerasbert_batch_rows", "Rows (texts or pairs) per micro-batch the model ran.",
                                    buckets=ROW_BUCKETS, registry=self.registry)
        self.queue_time = Histogram("kerasbert_queue_seconds", "Time a request waited for its micro-batch to start.",
                                    buckets=LATENCY_BUCKETS, registry=self.registry)

    def observe_batch(self, rows, waits):
        """A micro-batch of `rows` started; `waits`: the seconds each of its requests waited."""
        self.batch_rows.observe(rows)
        for wait in waits:
            self.queue_time.observe(wait)

    async def endpoint(self, request):
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


class MetricsMiddleware:
    """ASGI middleware counting and timing every HTTP request into a `ServerMetrics`."""

    def __init__(self, app, metrics):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        route = scope["path"] if scope["path"] in self.metrics.routes else "other"
        start, status = time.perf_counter(), [500]

        async def sent(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            self.metrics.requests.labels(route, str(status[0])).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - start)
