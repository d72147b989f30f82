"""Fixtures for the langgraph-sdk compatibility suite.

The suite drives a LangGraph-API server with the official async client. It runs against a
server at ``WEIR_SERVER_URL`` (default ``http://127.0.0.1:2024``). When ``WEIR_SERVER_CMD`` is
set, the suite owns the server: it starts that shell command before the first test, waits for
``GET /ok``, and the ``server`` fixture can restart it (for HITL across two processes). Without
``WEIR_SERVER_CMD`` the server is someone else's, and the tests that restart it are skipped.

Tests marked ``weir_only`` pin weir behaviour the real LangGraph server does not have (it
validates run input against the graph's schema, limits body size, ...); deselect them with
``-m "not weir_only"`` when validating the suite against ``langgraph dev``.
"""

import asyncio
import contextlib
import os
import signal
import subprocess
import time
import uuid

import httpx
import pytest
import pytest_asyncio
from langgraph_sdk import get_client

URL = os.environ.get("WEIR_SERVER_URL", "http://127.0.0.1:2024").rstrip("/")
CMD = os.environ.get("WEIR_SERVER_CMD")
# The official server's deterministic assistant ids: uuid5(this namespace, graph_id) (langgraph_api/graph.py).
NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")


def assistant_id(graph_id: str) -> str:
    """The id of the system assistant of `graph_id`."""
    return str(uuid.uuid5(NAMESPACE, graph_id))


def wait_ok(timeout: float = 60.0, proc=None) -> None:
    """Waits until the server answers `GET /ok`, or fails naming what happened."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server command exited with {proc.returncode}: {CMD}")
        try:
            r = httpx.get(URL + "/ok", timeout=2.0)
            if r.status_code == 200:
                return
            last = f"status {r.status_code}"
        except httpx.HTTPError as e:
            last = repr(e)
        time.sleep(0.2)
    raise RuntimeError(f"no answer from {URL}/ok within {timeout}s ({last})")


class Server:
    """The server under test; restartable when the suite started it."""

    def __init__(self):
        self.proc = None

    @property
    def owned(self) -> bool:
        """Whether this suite started the server (and so can restart it)."""
        return CMD is not None

    def start(self) -> None:
        """Starts the server command and waits for it to answer."""
        self.proc = subprocess.Popen(CMD, shell=True, start_new_session=True)
        wait_ok(proc=self.proc)

    def stop(self) -> None:
        """Stops the server with SIGINT (a graceful stop), then SIGKILL after 20 s."""
        if self.proc is None:
            return
        pgid = os.getpgid(self.proc.pid)
        os.killpg(pgid, signal.SIGINT)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        """Stops the server and starts a new process on the same store."""
        if not self.owned:
            pytest.skip("restarting needs WEIR_SERVER_CMD (the suite must own the server)")
        self.stop()
        self.start()


_SERVER = Server()


def pytest_sessionstart(session):
    if CMD:
        _SERVER.start()
    else:
        wait_ok(timeout=10)


def pytest_sessionfinish(session, exitstatus):
    _SERVER.stop()


@pytest.fixture
def server() -> Server:
    """The server under test (`server.restart()` for a second process)."""
    return _SERVER


@pytest_asyncio.fixture
async def client():
    """The official async client on the server under test."""
    c = get_client(url=URL)
    yield c
    await c.http.client.aclose()


@pytest_asyncio.fixture
async def raw():
    """A plain httpx client on the server, for what the SDK cannot send (bad bodies, headers)."""
    async with httpx.AsyncClient(base_url=URL, timeout=30.0) as c:
        yield c


@pytest_asyncio.fixture
async def thread(client):
    """A fresh thread."""
    return await client.threads.create()


class Listener:
    """Collects a stream's parts (any async iterable's items) in the background until stopped."""

    def __init__(self, parts):
        self.parts_seen = []
        self.task = asyncio.create_task(self._collect(parts))

    async def _collect(self, parts):
        async for part in parts:
            self.parts_seen.append(part)

    async def until(self, done, timeout=15.0):
        """Waits until `done(parts)` holds, and returns the parts."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not done(self.parts_seen):
            if self.task.done():
                self.task.result()  # the stream's error, if it failed
                raise AssertionError(f"the stream ended: {self.parts_seen}")
            assert asyncio.get_running_loop().time() < deadline, f"timed out; got {self.parts_seen}"
            await asyncio.sleep(0.05)
        return list(self.parts_seen)

    async def stop(self):
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
