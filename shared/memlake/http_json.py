"""JSON over HTTP for the model endpoints a user brings (OpenAI-compatible embeddings, /rerank).

One POST with a timeout, retried with exponential backoff and jitter on 429, 5xx, timeouts,
refused or reset connections and answers cut short (a Retry-After in seconds is honoured up
to MAX_WAIT); any other answer fails at once. Failures raise HttpJsonError with the status,
whether a later retry may help, and the server's own message (OpenAI's {"error":
{"message"}}, FastAPI's "detail", a plain "message" or "error", else the start of the body),
never the request's headers: the API key stays out of errors and logs.

The standard library's urllib does it: two small calls do not warrant an HTTP client
dependency in the Lambda image (httpx is the test suite's). Its timeout bounds each socket
operation (connect, each read), not the whole answer.
"""

from __future__ import annotations

import http.client
import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

MAX_WAIT = 10.0  # seconds: the longest pause between two attempts
MAX_BODY = 64 << 20  # an answer longer than this is refused
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class HttpJsonError(Exception):
    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


def server_message(raw: bytes) -> str:
    """What an error answer says, in at most 300 characters."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text[:300]
    found: Any = body
    if isinstance(body, dict):
        for key in ("error", "detail", "message"):
            if body.get(key):
                found = body[key]
                break
        if isinstance(found, dict):
            found = found.get("message") or found
    return (found if isinstance(found, str) else json.dumps(found))[:300]


def _wait(attempt: int, backoff: float, retry_after: str | None) -> float:
    if retry_after and retry_after.strip().isdigit():
        return min(MAX_WAIT, float(retry_after.strip()))
    return min(MAX_WAIT, backoff * 2**attempt * (0.5 + random.random()))


def post_json(
    url: str,
    body: Any,
    *,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
    attempts: int = 4,
    backoff: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """POST `body` as JSON to `url` and return the decoded JSON answer (see the module doc)."""
    data = json.dumps(body).encode()
    sent = {"content-type": "application/json", "accept": "application/json", **(headers or {})}
    last = HttpJsonError(f"POST {url}: no attempt made")
    for attempt in range(max(1, attempts)):
        retry_after = None
        request = urllib.request.Request(url, data=data, headers=sent, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read(MAX_BODY + 1)
                announced = response.headers.get("content-length", "")
            if announced.isdigit() and len(raw) < int(announced):  # read(n) does not raise
                raise http.client.IncompleteRead(raw, int(announced) - len(raw))
        except urllib.error.HTTPError as e:
            status, said = e.code, server_message(e.read(64 << 10))
            retry_after = e.headers.get("retry-after") if e.headers else None
            last = HttpJsonError(
                f"POST {url} answered {status}: {said}",
                status=status,
                retryable=status in _RETRY_STATUS,
            )
        except TimeoutError:
            last = HttpJsonError(f"POST {url}: no answer within {timeout:g} s", retryable=True)
        except (urllib.error.URLError, ConnectionError, OSError) as e:
            reason = getattr(e, "reason", e)
            last = HttpJsonError(f"POST {url}: cannot connect ({reason})", retryable=True)
        except http.client.HTTPException as e:  # the answer cut short or garbled on the wire
            what = type(e).__name__
            last = HttpJsonError(f"POST {url}: the answer broke off ({what})", retryable=True)
        else:
            if len(raw) > MAX_BODY:
                raise HttpJsonError(f"POST {url}: the answer is over {MAX_BODY >> 20} MiB")
            try:
                return json.loads(raw)
            except ValueError:
                said = raw[:120].decode("utf-8", "replace")
                raise HttpJsonError(f"POST {url}: the answer is not JSON: {said!r}") from None
        if not last.retryable or attempt == attempts - 1:
            break
        sleep(_wait(attempt, backoff, retry_after))
    raise last
