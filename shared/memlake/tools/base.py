"""What every tool is made of: a spec with models, annotations and a run function."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from memlake.context import ToolContext
from memlake.errors import CorruptObject, Unavailable
from memlake.store.base import ObjectNotFound

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out", bound=BaseModel)


@dataclass(frozen=True)
class Annotations:
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool = False

    def to_mcp(self) -> dict[str, Any]:
        """The hints, all explicit (the tool's title is Tool.title, not repeated here)."""
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


READ_ONLY = Annotations(read_only=True, destructive=False, idempotent=True)


@dataclass(frozen=True)
class ToolSpec(Generic[In, Out]):
    name: str
    title: str
    description: str
    input_model: type[In]
    output_model: type[Out]
    annotations: Annotations
    run: Callable[[ToolContext, In], Out]
    #: an explicit null argument clears a stored field (the upserts), so the input schema
    #: admits null for optional arguments (memlake.mcp.schema.lean_input)
    null_clears: bool = False


#: what a model reads when an object it was reading was removed under it
MOVED_ON = (
    "An object this call was reading was removed meanwhile: an erasure, compaction or index"
    " merge replaced it while the call held an older version of the memory store"
)


def settled_error(ctx: ToolContext, exc: Exception) -> Exception:
    """`exc`, unless it is a missing object that the tenant's newest manifest no longer names:
    then a reader in flight lost it to an erasure or compaction (memlake.erasure), and the
    same call, tried again, reads the newest version: Unavailable (retryable), never the
    damage error that sends an operator to `memlake repair`."""
    key = getattr(exc, "key", "")
    lost = (isinstance(exc, CorruptObject) and exc.missing) or isinstance(exc, ObjectNotFound)
    if not lost or not key:
        return exc
    try:
        named = key in ctx.lake.snapshot(ctx.tenant).manifest.all_keys()
    except Exception:  # the store is failing too: the first error stands
        return exc
    if named:
        return exc
    return Unavailable(MOVED_ON, hint="Retry the call: it reads the newest version.")
