"""S3 object store on boto3, with conditional writes (If-None-Match: *).

A ranged read asks GetObject for "bytes=start-(end-1)"; S3 clips a range past the end and
answers 416 InvalidRange when the range starts at or past it (RangeNotSatisfiable). Ranged
reads go the lean way first (memlake.store.s3_lean: the client's signer and HTTP session
without its per-call machinery, ~2.5x less CPU a read); anything but a plain success is asked
again through boto3, whose retries and errors below stay the one place failures are handled.

Every put sends the body's sha256 (ChecksumAlgorithm), so S3 stores no object that was cut
or altered on the way, and a whole get asks for it back (ChecksumMode) for botocore to check;
the manifest's own record of each object's sha256 is checked by the readers above.

S3 answers a lost conditional put with 412 PreconditionFailed, and with 409
ConditionalRequestConflict when another conditional put on the key is in flight; both mean
"someone else won", so both become PreconditionFailed.
"""

from __future__ import annotations

import base64
import builtins
import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from memlake.errors import StorageError
from memlake.pools import STORE_IO
from memlake.store.base import (
    ObjectInfo,
    ObjectNotFound,
    PreconditionFailed,
    RangeNotSatisfiable,
    check_range,
)
from memlake.store.s3_lean import LeanRangedGet

_LOST_RACE = {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"}
_MISSING = {"NoSuchKey", "404", "NotFound"}


def _code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))


def _status(err: ClientError) -> int:
    return int(err.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


@contextmanager
def _errors(
    op: str, key: str, special: Callable[[ClientError], None] | None = None
) -> Iterator[None]:
    """botocore's errors as StorageError naming the operation and key; `special` may raise a
    more precise error for a ClientError first (a missing key, a lost race)."""
    try:
        yield
    except ClientError as e:
        if special is not None:
            special(e)
        raise StorageError(f"S3 {op} failed for {key}: {_code(e)}") from e
    except BotoCoreError as e:
        raise StorageError(f"S3 {op} failed for {key}: {e}") from e


def _missing(key: str) -> Callable[[ClientError], None]:
    def check(e: ClientError) -> None:
        if _code(e) in _MISSING or _status(e) == 404:
            raise ObjectNotFound(f"no object {key}", key=key) from e

    return check


def _missing_or_past_end(key: str, start: int) -> Callable[[ClientError], None]:
    def check(e: ClientError) -> None:
        _missing(key)(e)
        if _code(e) == "InvalidRange" or _status(e) == 416:
            raise RangeNotSatisfiable(f"{key}: range starts at {start}, past its end") from e

    return check


def _lost_race(key: str) -> Callable[[ClientError], None]:
    def check(e: ClientError) -> None:
        if _code(e) in _LOST_RACE or _status(e) in (409, 412):
            raise PreconditionFailed(f"{key} already exists") from e

    return check


class S3Store:
    remote = True  # a request costs a round trip (memlake.lake.head_copy.put_hint)

    def __init__(
        self, bucket: str, *, prefix: str = "", client: Any = None, lean_reads: bool = True
    ) -> None:
        if client is None:
            import boto3
            from botocore.config import Config

            # as many connections as reads in flight (memlake.pools.STORE_IO): botocore's
            # default of 10 would queue a cold search's rounds (decision 4401)
            wide = Config(max_pool_connections=STORE_IO.threads)
            client = boto3.client("s3", config=wide)
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.lean = LeanRangedGet.of(client, bucket) if lean_reads else None

    def _key(self, key: str) -> str:
        return self.prefix + key

    def get(self, key: str) -> bytes:
        with _errors("get", key, _missing(key)):
            resp = self.client.get_object(
                Bucket=self.bucket, Key=self._key(key), ChecksumMode="ENABLED"
            )
            return resp["Body"].read()

    def get_range(self, key: str, start: int, end: int) -> bytes:
        check_range(start, end)
        if self.lean is not None and self.lean.on:
            lean = self.lean.get(self._key(key), start, end)
            if lean is not None:
                return lean
        with _errors("get", key, _missing_or_past_end(key, start)):
            resp = self.client.get_object(
                Bucket=self.bucket, Key=self._key(key), Range=f"bytes={start}-{end - 1}"
            )
            data: bytes = resp["Body"].read()
        if not resp.get("ContentRange"):  # a store that ignored the Range sent it whole
            data = data[start:end]
            if not data:
                raise RangeNotSatisfiable(f"{key}: range starts at {start}, past its end")
        return data

    def size(self, key: str) -> int:
        with _errors("head", key, _missing(key)):
            resp = self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        return int(resp["ContentLength"])

    def exists(self, key: str) -> bool:
        try:
            with _errors("head", key, _missing(key)):
                self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ObjectNotFound:
            return False
        return True

    def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        kwargs: dict[str, Any] = {
            "Bucket": self.bucket,
            "Key": self._key(key),
            "Body": data,
            # S3 refuses a body that does not match (BadDigest) and keeps the checksum, so a
            # whole GetObject is verified against it too (ChecksumMode, botocore)
            "ChecksumAlgorithm": "SHA256",
            "ChecksumSHA256": base64.b64encode(hashlib.sha256(data).digest()).decode(),
        }
        if if_absent:
            kwargs["IfNoneMatch"] = "*"
        with _errors("put", key, _lost_race(key) if if_absent else None):
            self.client.put_object(**kwargs)

    def delete(self, key: str) -> None:
        with _errors("delete", key):
            self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        paginator = self.client.get_paginator("list_objects_v2")
        with _errors("list", prefix):
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key(prefix)):
                for obj in page.get("Contents", []):
                    key = obj["Key"][len(self.prefix) :]
                    yield ObjectInfo(key, int(obj["Size"]), obj["LastModified"])

    def list_prefixes(self, prefix: str) -> builtins.list[str]:
        full = self._key(prefix)
        paginator = self.client.get_paginator("list_objects_v2")
        names: set[str] = set()
        with _errors("list", prefix):
            for page in paginator.paginate(Bucket=self.bucket, Prefix=full, Delimiter="/"):
                for common in page.get("CommonPrefixes", []):
                    names.add(common["Prefix"][len(full) :].rstrip("/"))
        return sorted(n for n in names if n)
