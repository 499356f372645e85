"""Ranged GETs without botocore's per-call machinery (decision 4401, lever 17).

A cold search is hundreds of ranged GETs side by side, and each one's Python holds the GIL:
boto3's GetObject spends ~1 ms of CPU a call on a quiet host (~2 on a busy one:
tests/bench/s3_client_cpu_bench.py) in parameter validation, endpoint rules, a dozen event
handlers, the response parser and the retry handler. The requests then wait for each other, and
a 100k x 20 cold search on the S3 model grows from ~470 ms to ~800 ms with that CPU charged. A
ranged read needs none of it: the URL of an object is the bucket's base URL and its key, and
what it needs on the way is a SigV4 signature.

`LeanRangedGet` therefore takes from the client, once, what the client itself would use: the
bucket's base URL (the URL of one GetObject it makes, caught before it is sent: botocore's own
endpoint rules decide virtual host or path style, the region, a custom endpoint), its signer's
auth for SigV4 (frozen credentials a request, so refreshed ones are taken), its event hooks
(moto's in-process mock answers at `before-send`, as it does for the client's own calls) and its
HTTP session (the client's pool, timeouts, proxies and certificates). A request then costs a
signature and a send. It answers only a plain success: any other status or a transport error
returns None, and the caller asks boto3 again, whose retries and error mapping stay the one
place where failures are handled.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from botocore.awsrequest import AWSRequest
from botocore.hooks import first_non_none_response

log = logging.getLogger("memlake.store")

#: answers in a row that were not a plain success before the lean path is given up
MISSES = 8
#: the key of the probe GetObject that tells the bucket's base URL (caught before it is sent)
_PROBE = "memlake-base-url-probe"


class _Seen(Exception):
    def __init__(self, url: str) -> None:
        self.url = url


def _object_url(client: Any, bucket: str, key: str) -> str:
    """The URL the client itself sends a GetObject of `key` to (its endpoint rules: virtual
    host or path style, the region, a custom endpoint), caught before it is sent."""

    def seen(request: Any, **_: Any) -> None:
        raise _Seen(str(request.url))

    event = "before-send.s3.GetObject"
    client.meta.events.register_first(event, seen, unique_id=_PROBE)
    try:
        client.get_object(Bucket=bucket, Key=key)
    except _Seen as e:
        return e.url.split("?", 1)[0]
    finally:
        client.meta.events.unregister(event, unique_id=_PROBE)
    raise ValueError("the client sent a GetObject past its before-send hook")


class LeanRangedGet:
    """Signed ranged GETs through a boto3 S3 client's own signer, hooks and HTTP session."""

    def __init__(self, client: Any, bucket: str) -> None:
        base = _object_url(client, bucket, _PROBE)
        if not base.endswith("/" + _PROBE):
            raise ValueError(f"unexpected object URL shape: {base}")
        self._base = base[: -len(_PROBE)]
        self._region = client.meta.region_name or "us-east-1"
        self._signer = client._request_signer
        self._events = client.meta.events
        self._http = client._endpoint.http_session
        self._misses = 0

    @classmethod
    def of(cls, client: Any, bucket: str) -> LeanRangedGet | None:
        """The lean path for this client, or None when its botocore does not have the parts
        it takes (boto3 then makes every read)."""
        try:
            return cls(client, bucket)
        except Exception as e:  # noqa: BLE001 - any shape we do not know: boto3 alone
            log.info("ranged reads go through boto3 alone (%s)", e)
            return None

    @property
    def on(self) -> bool:
        """False once MISSES answers in a row said the lean request was wrong (a signature the
        store refuses, a redirect): from then on boto3 makes every read."""
        return self._misses < MISSES

    def get(self, key: str, start: int, end: int) -> bytes | None:
        """Bytes start..end-1 of `key` (a full key, prefix included); None when the answer is
        not a plain 206 (or a 200 whose body holds the range): the caller asks boto3."""
        request = AWSRequest(
            method="GET",
            url=self._base + quote(key, safe="/~"),
            headers={"Range": f"bytes={start}-{end - 1}"},
        )
        try:
            self._signer.get_auth_instance("s3", self._region, "s3v4").add_auth(request)
            prepared = request.prepare()
            answered = self._events.emit("before-send.s3.GetObject", request=prepared)
            response = first_non_none_response(answered)
            if response is None:
                response = self._http.send(prepared)
            status, data = response.status_code, response.content
        except Exception:  # noqa: BLE001 - a transport error is boto3's to retry, report
            return None
        if status == 206 and response.headers.get("Content-Range"):
            self._misses = 0
            return bytes(data)
        if status == 200 and len(data) > start:  # a store that ignored the Range
            self._misses = 0
            return bytes(data[start:end])
        self._miss(status)
        return None

    def _miss(self, status: int) -> None:
        """Count an answer that says this request was wrong (a redirect, a refused signature),
        not one that says the object is missing or the store is busy (boto3 answers those)."""
        if 300 <= status < 500 and status not in (404, 416):
            self._misses += 1
            if self._misses == MISSES:
                log.warning(
                    "lean ranged reads from S3 were refused %d times in a row (last status"
                    " %s); boto3 makes them from now on",
                    MISSES,
                    status,
                )
