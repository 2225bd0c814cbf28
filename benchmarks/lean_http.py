"""A lean HTTP/1.1 client for load generators: JSON posts over one kept-alive connection on asyncio streams.

The clients of `serve_load.py` share the server's cores, so what they spend per request is taken from the server:
httpx's `AsyncClient` spends about 2 ms of CPU a request, this client about a tenth of that (a load generator
such as wrk is lean for the same reason). It speaks just what the benchmark needs: `POST` with a JSON body, a
response with `Content-Length`.

Examples:
    >>> async with LeanConnection("127.0.0.1", 8000) as connection:
    ...     status, body = await connection.post_json("/embed", {"inputs": ["a lovely film"]})
"""

import asyncio
import json


class LeanConnection:
    """One kept-alive connection to `host:port`; `post_json(path, body)` -> (status, response body bytes)."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def __aenter__(self):
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, *exc):
        self.writer.close()
        await self.writer.wait_closed()

    async def post_json(self, path, body):
        payload = json.dumps(body).encode()
        self.writer.write(f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                          f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.split(":", 1) for line in header_lines if ":" in line)
        length = {name.strip().lower(): value.strip() for name, value in headers.items()}.get("content-length")
        if length is None:
            raise ValueError(f"The response to POST {path} has no Content-Length: {status_line}")
        return int(status_line.split()[1]), await self.reader.readexactly(int(length))
