"""Domain errors. Every failure a caller can act on is a MemlakeError with a stable code.

The MCP layer maps these to tool results with isError (see memlake.mcp.errors); nothing else
inspects messages. `hint` tells a model what to do next.
"""

from __future__ import annotations


class MemlakeError(Exception):
    """Base of all domain errors."""

    code = "internal_error"
    retryable = False

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"code": self.code, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        if self.retryable:
            out["retryable"] = True
        return out


class InvalidArgument(MemlakeError):
    code = "invalid_argument"


class NotFound(MemlakeError):
    code = "not_found"


class AlreadyExists(MemlakeError):
    code = "already_exists"


class Conflict(MemlakeError):
    """A rule about the current state forbids the change (a cycle, an illegal status move)."""

    code = "conflict"


class Unavailable(MemlakeError):
    """Storage is busy or unreachable; the same call may succeed later."""

    code = "unavailable"
    retryable = True


class StorageError(MemlakeError):
    code = "storage_error"
    retryable = True


class CorruptObject(StorageError):
    """A stored object is not what its reader expects (truncated, hostile, an unknown layout);
    reading it again will not help."""

    code = "corrupt_object"
    retryable = False


class ConfigurationError(MemlakeError):
    code = "configuration_error"
