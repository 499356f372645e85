"""S3 object store on boto3, with conditional writes (If-None-Match: *).

S3 answers a lost conditional put with 412 PreconditionFailed, and with 409
ConditionalRequestConflict when another conditional put on the key is in flight; both mean
"someone else won", so both become PreconditionFailed.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from memlake.errors import StorageError
from memlake.store.base import ObjectInfo, ObjectNotFound, PreconditionFailed

_LOST_RACE = {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"}
_MISSING = {"NoSuchKey", "404", "NotFound"}


def _code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))


def _status(err: ClientError) -> int:
    return int(err.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


class S3Store:
    def __init__(self, bucket: str, *, prefix: str = "", client: Any = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("s3")
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""

    def _key(self, key: str) -> str:
        return self.prefix + key

    def get(self, key: str) -> bytes:
        try:
            resp = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
            return resp["Body"].read()
        except ClientError as e:
            if _code(e) in _MISSING or _status(e) == 404:
                raise ObjectNotFound(f"no object {key}") from e
            raise StorageError(f"S3 get failed for {key}: {_code(e)}") from e
        except BotoCoreError as e:
            raise StorageError(f"S3 get failed for {key}: {e}") from e

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(key))
            return True
        except ClientError as e:
            if _code(e) in _MISSING or _status(e) == 404:
                return False
            raise StorageError(f"S3 head failed for {key}: {_code(e)}") from e
        except BotoCoreError as e:
            raise StorageError(f"S3 head failed for {key}: {e}") from e

    def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": self._key(key), "Body": data}
        if if_absent:
            kwargs["IfNoneMatch"] = "*"
        try:
            self.client.put_object(**kwargs)
        except ClientError as e:
            if if_absent and (_code(e) in _LOST_RACE or _status(e) in (409, 412)):
                raise PreconditionFailed(f"{key} already exists") from e
            raise StorageError(f"S3 put failed for {key}: {_code(e)}") from e
        except BotoCoreError as e:
            raise StorageError(f"S3 put failed for {key}: {e}") from e

    def delete(self, key: str) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as e:
            raise StorageError(f"S3 delete failed for {key}: {_code(e)}") from e

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        paginator = self.client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key(prefix)):
                for obj in page.get("Contents", []):
                    key = obj["Key"][len(self.prefix) :]
                    yield ObjectInfo(key, int(obj["Size"]), obj["LastModified"])
        except ClientError as e:
            raise StorageError(f"S3 list failed for {prefix}: {_code(e)}") from e

    def list_prefixes(self, prefix: str) -> builtins.list[str]:
        full = self._key(prefix)
        paginator = self.client.get_paginator("list_objects_v2")
        names: set[str] = set()
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=full, Delimiter="/"):
                for common in page.get("CommonPrefixes", []):
                    names.add(common["Prefix"][len(full) :].rstrip("/"))
        except ClientError as e:
            raise StorageError(f"S3 list failed for {prefix}: {_code(e)}") from e
        return sorted(n for n in names if n)
