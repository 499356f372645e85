"""A bounded load test of `memlake serve` on loopback (issue 10, defect 5).

50 clients start together and each sends 20 requests, every one on a fresh connection (the
case that overflowed the old listen backlog of 5): pings, and every fifth a tools/call that
reads the lake. Every request must get a 2xx: no reset, no 5xx. Bounded: 1,000 requests, a
30 s socket timeout, and a 120 s deadline for the whole run.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from .serverproc import HOST, ServerProcess, start_server

CLIENTS = 50
REQUESTS = 20
DEADLINE = 120.0

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with start_server(tmp_path_factory.mktemp("lake")) as proc:
        yield proc


def body(client: int, i: int) -> bytes:
    msg: dict[str, object] = {"jsonrpc": "2.0", "id": i, "method": "ping"}
    if i % 5 == 0:
        args = {"name": "list_episodes", "arguments": {"limit": 5}}
        msg = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": args}
    return json.dumps(msg).encode()


def one_request(port: int, data: bytes) -> str:
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        conn.request(
            "POST",
            "/mcp",
            data,
            {"Content-Type": "application/json", "Accept": "application/json"},
        )
        resp = conn.getresponse()
        answer = json.loads(resp.read())
        if "result" not in answer or answer["result"].get("isError"):
            return f"status {resp.status}: {str(answer)[:200]}"
        return f"status {resp.status // 100}xx"
    except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine) as e:
        return f"reset {type(e).__name__}"
    except OSError as e:
        return f"error {type(e).__name__}"
    finally:
        conn.close()


def test_50_clients_x_20_requests_no_reset_no_5xx(server: ServerProcess) -> None:
    port = int(server.base_url.rsplit(":", 1)[1])
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(CLIENTS)
    deadline = time.monotonic() + DEADLINE

    def client(n: int) -> None:
        start.wait()
        for i in range(1, REQUESTS + 1):
            if time.monotonic() > deadline:
                outcome = "not sent: deadline"
            else:
                outcome = one_request(port, body(n, i))
            with lock:
                outcomes[outcome] += 1

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(CLIENTS)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()) + 35)
    seconds = time.monotonic() - started
    print(f"{CLIENTS}x{REQUESTS} requests in {seconds:.1f}s: {dict(outcomes)}")
    assert outcomes == Counter({"status 2xx": CLIENTS * REQUESTS}), dict(outcomes)
    assert "Traceback" not in server.log(), server.log()[-3000:]
