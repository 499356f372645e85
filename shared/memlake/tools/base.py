"""What every tool is made of: a spec with models, annotations and a run function."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from memlake.context import ToolContext

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
