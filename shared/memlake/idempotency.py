"""Idempotency keys: a retried write with the same key returns the first result, once.

add_episode, add_thread and upsert_concept take an optional `idempotency_key`. The key's record
(tool, key, a hash of the arguments, the first result) is a row of the tenant's
`idempotency_keys` table, staged in the SAME transaction as the write it protects: both commit
in one manifest version or neither does. The check runs inside the commit function, so a retry
racing the first attempt (same process: group commit; another process or Lambda: a lost
conditional manifest write, then a re-run against the newer snapshot) finds the winner's record
and returns its result instead of writing again. See docs/decisions/1051.

Ideas from Powertools' idempotency utility (aws_lambda_powertools.utilities.idempotency): the
payload is hashed as sorted-key JSON, a record expires after a TTL, and the same key with a
different payload is an error (its IdempotencyValidationError). Its DynamoDB/Redis persistence
layers are not used: the lake is the only store, and only the lake can commit the record
atomically with the write.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, Field, model_validator

from memlake.errors import Conflict
from memlake.lake.engine import Lake
from memlake.lake.schema import SYSTEM_FIELDS, TS, TableSpec
from memlake.lake.txn import Transaction
from memlake.stored_rows import StoredRow
from memlake.timeutil import iso, now

log = logging.getLogger("memlake.idempotency")
TABLE = "idempotency_keys"
FIELD = "idempotency_key"
KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{7,127}$"
Out = TypeVar("Out", bound=BaseModel)

#: The time source for expiry (tests replace it to move past the TTL).
clock: Callable[[], datetime] = now

KEY_HELP = "A new UUID per write makes retries safe"
IdempotencyKey = Annotated[str, Field(min_length=8, max_length=128, pattern=KEY_PATTERN)]


def key_field() -> Any:
    """The `idempotency_key` field of a tool's input model."""
    return Field(None, description=KEY_HELP)


def _schema(_dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),  # record_id(tool, key)
            pa.field("tool", pa.string()),
            pa.field("key", pa.string()),
            pa.field("payload_hash", pa.string()),  # SHA-256 of the arguments as sorted JSON
            pa.field("result", pa.string()),  # the first call's result, JSON text
            pa.field("created_at", TS),
            pa.field("expires_at", TS),
            *SYSTEM_FIELDS,
        ]
    )


def expired_mask(table: pa.Table) -> pa.Array:
    """Rows past their expiry (compaction turns them into tombstones, then drops them)."""
    cutoff = pa.scalar(clock(), TS)
    return pc.fill_null(pc.less_equal(table.column("expires_at"), cutoff), False)


SPEC = TableSpec(TABLE, _schema, ("expires_at",), expired=expired_mask)


class IdempotencyRow(StoredRow):
    """What `memlake import` accepts for this table: a record a keyed call could have written."""

    id: str = Field(pattern=r"^[0-9a-f]{40}$")
    tool: str = Field(pattern=r"^[a-z_]{1,64}$")
    key: IdempotencyKey
    payload_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    result: str = Field(min_length=2, max_length=1_000_000)
    created_at: datetime
    expires_at: datetime

    @model_validator(mode="after")
    def _consistent(self) -> IdempotencyRow:
        if self.id != record_id(self.tool, self.key):
            raise ValueError("id must be record_id(tool, key)")
        if self.expires_at <= self.created_at:
            raise ValueError("expires_at must be after created_at")
        try:
            if not isinstance(json.loads(self.result), dict):
                raise ValueError
        except ValueError:
            raise ValueError("result must be JSON object text") from None
        return self


def record_id(tool: str, key: str) -> str:
    """Keys are scoped per tool (the same key on two tools names two records). The row id is a
    hash, so a caller's key never becomes part of an object key or path."""
    return hashlib.sha256(f"{tool}\n{key}".encode()).hexdigest()[:40]


def payload_hash(args: BaseModel) -> str:
    """The arguments the caller gave (after validation, without the key) as sorted-key JSON."""
    data = args.model_dump(mode="json", exclude_unset=True, exclude={FIELD})
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Scope:
    tool: str
    key: str
    payload_hash: str
    ttl: timedelta

    @property
    def row_id(self) -> str:
        return record_id(self.tool, self.key)

    @classmethod
    def of(cls, tool: str, args: BaseModel, ttl_seconds: float) -> Scope | None:
        """The scope of a call of `tool` with `args` (None: no key given); a record is kept
        `ttl_seconds` (Settings.idempotency_ttl_seconds)."""
        key = getattr(args, FIELD, None)
        if key is None:
            return None
        ttl = timedelta(seconds=ttl_seconds)
        return cls(tool, key, payload_hash(args), ttl)


def _mismatch(scope: Scope, first_at: datetime | None) -> Conflict:
    return Conflict(
        f"idempotency_key {scope.key!r} was already used for a {scope.tool} call with different"
        f" arguments (at {iso(first_at)}); nothing was written",
        hint=(
            "Reuse a key only to retry the identical call. For a new write, pass a new key"
            " (e.g. a fresh UUID) or none."
        ),
    )


def replay(txn: Transaction, scope: Scope, output: type[Out]) -> Out | None:
    """The first result stored under this key, None if there is none (or it expired); a
    Conflict if the key was used with other arguments."""
    row = txn.get(TABLE, scope.row_id)
    if row is None or row["expires_at"] <= clock():
        return None
    if row["tool"] != scope.tool or row["key"] != scope.key:  # pragma: no cover - 160-bit hash
        raise Conflict(f"idempotency_key {scope.key!r} collides", hint="Use another key.")
    if row["payload_hash"] != scope.payload_hash:
        raise _mismatch(scope, row["created_at"])
    log.info("idempotent replay", extra={"tool": scope.tool, "record": scope.row_id})
    # extra keys ignored: a result stored by an older version that returned more fields
    return output.model_validate_json(row["result"], extra="ignore")


def record(txn: Transaction, scope: Scope, result: BaseModel) -> None:
    at = clock()
    txn.put(
        TABLE,
        {
            "id": scope.row_id,
            "tool": scope.tool,
            "key": scope.key,
            "payload_hash": scope.payload_hash,
            "result": result.model_dump_json(),
            "created_at": at,
            "expires_at": at + scope.ttl,
        },
    )


def earlier_result(lake: Lake, tenant: str, scope: Scope | None, output: type[Out]) -> Out | None:
    """A replay found before doing expensive work (embedding); the commit checks again."""
    if scope is None:
        return None
    return replay(Transaction(lake.snapshot(tenant)), scope, output)


def commit_once(
    lake: Lake,
    tenant: str,
    scope: Scope | None,
    output: type[Out],
    change: Callable[[Transaction], Out],
) -> Out:
    """Commit `change` unless its key already has a result: the check, the write and the key's
    record run in one commit function, re-run by the engine on a lost race."""
    if scope is None:
        return lake.commit(tenant, change)

    def guarded(txn: Transaction) -> Out:
        first = replay(txn, scope, output)
        if first is not None:
            return first
        result = change(txn)
        record(txn, scope, result)
        return result

    return lake.commit(tenant, guarded)
