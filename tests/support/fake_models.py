"""A local stand-in for the model endpoints users bring (tests start it; no network): an
OpenAI-compatible POST /v1/embeddings and the /rerank shapes of Cohere, Jina, Infinity
(results + relevance_score), Voyage (data + relevance_score) and TEI (texts in, a bare list of
{index, score} out).

By default it answers like a real server: embeddings are hashed bags of words (texts sharing
words are close, so a search over them finds things), rerank scores are the share of the
query's words a document holds. A test scripts faults with `fail_next` (status, body, delay,
headers; `route` limits one to a path) and reads what was asked in `requests`."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

WORD = re.compile(r"\w\w+")


def bag_vector(text: str, dim: int) -> list[float]:
    """Deterministic: each word adds 1 at two hashed positions (not normalised: the client must)."""
    v = np.zeros(dim)
    for w in WORD.findall(text.lower()):
        h = hashlib.blake2b(w.encode(), digest_size=8).digest()
        v[int.from_bytes(h[:4], "little") % dim] += 1.0
        v[int.from_bytes(h[4:], "little") % dim] += 0.5
    if not v.any():
        v[0] = 1.0
    return [float(x) for x in v * 3.0]


def overlap(query: str, doc: str) -> float:
    asked = set(WORD.findall(query.lower()))
    return len(asked & set(WORD.findall(doc.lower()))) / max(1, len(asked))


@dataclass
class Fault:
    status: int = 200
    body: Any = None  # JSON to answer (bytes: sent as is); None: the normal answer
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    route: str = ""  # only a request whose path ends with this meets the fault


@dataclass
class FakeModels:
    dim: int = 64
    rerank_shape: str = "cohere"  # cohere | voyage | tei
    requests: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    url: str = ""

    def fail_next(self, *faults: Fault) -> None:
        self.faults.extend(faults)

    def answer(self, path: str, body: Any) -> tuple[int, Any]:
        if path.endswith("/embeddings"):
            texts = body.get("input") if isinstance(body, dict) else None
            if not isinstance(texts, list) or not body.get("model"):
                return 400, {"error": {"message": "model and input are required"}}
            rows = [
                {"object": "embedding", "index": i, "embedding": bag_vector(t, self.dim)}
                for i, t in enumerate(texts)
            ]
            return 200, {"object": "list", "data": rows[::-1], "model": body["model"]}
        if path.endswith("/rerank"):
            if self.rerank_shape == "tei":
                if "texts" not in body:
                    return 422, {"error": "missing field `texts`", "error_type": "Validation"}
                scores = [overlap(body["query"], d) for d in body["texts"]]
                ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
                return 200, [{"index": i, "score": scores[i]} for i in ranked]
            scores = [overlap(body["query"], d) for d in body["documents"]]
            ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
            rows = [{"index": i, "relevance_score": scores[i]} for i in ranked]
            return 200, {"data": rows} if self.rerank_shape == "voyage" else {"results": rows}
        return 404, {"error": {"message": f"no route {path}"}}


@contextmanager
def fake_models(**kw: Any) -> Iterator[FakeModels]:
    models = FakeModels(**kw)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            with lock:
                models.requests.append(
                    (self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                due = [f for f in models.faults if self.path.endswith(f.route)]
                fault = due[0] if due else None
                if fault is not None:
                    models.faults.remove(fault)
            if fault is not None and fault.delay:
                time.sleep(fault.delay)
            status, out = models.answer(self.path, body)
            if fault is not None and (fault.status != 200 or fault.body is not None):
                status, out = fault.status, fault.body
            data = out if isinstance(out, bytes) else json.dumps(out).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (fault.headers if fault else {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    models.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield models
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
