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
    #: the same request may succeed in a moment (a reset, 500, 503 SlowDown): a commit tries
    #: again itself; a full disk is retryable only once someone frees space
    transient = True


class CorruptObject(StorageError):
    """A stored object is not what its reader expects (truncated, hostile, an unknown layout);
    reading it again will not help."""

    code = "corrupt_object"
    retryable = False
    key = ""  # the damaged object's key, when known
    missing = False  # the object is not there at all (memlake.lake.checksums.missing)


class StorageFull(StorageError):
    """The data directory has no space (or quota) left. Retryable: once space is freed the same
    call succeeds, and the failed write left nothing behind to get in its way."""

    code = "storage_full"
    retryable = True
    transient = False
    HINT = (
        "The data directory is full: free space in it (or raise its quota), then retry the call; "
        "nothing was written."
    )

    def __init__(self, message: str, *, hint: str = HINT) -> None:
        super().__init__(message, hint=hint)


class StorageReadOnly(StorageError):
    """The data directory refuses writes (mounted read-only, or no write permission). Not
    retryable: retrying cannot help until an operator changes the mount or permissions."""

    code = "storage_read_only"
    retryable = False
    HINT = (
        "The data directory is read-only (mounted ro or no write permission): make it writable, "
        "then retry the call; nothing was written."
    )

    def __init__(self, message: str, *, hint: str = HINT) -> None:
        super().__init__(message, hint=hint)


class ConfigurationError(MemlakeError):
    code = "configuration_error"
