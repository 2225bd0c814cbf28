"""A kerasbert app under a real uvicorn server on loopback, in a thread of the test process."""

import contextlib
import socket
import threading
import time

import pytest
import uvicorn


@contextlib.contextmanager
def running_server(app):
    """Yield the base URL of `app` served by uvicorn on a free loopback port; stop it after."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 60
    while not server.started:
        assert time.time() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="session")
def serve_in_thread():
    """`running_server`, for the tests' own server fixtures: `with serve_in_thread(app) as url: ...`."""
    return running_server
