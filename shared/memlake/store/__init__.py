"""Object stores: one protocol, a local-directory and an S3 implementation."""

from memlake.store.base import (
    ObjectInfo,
    ObjectNotFound,
    ObjectStore,
    PreconditionFailed,
    RangeNotSatisfiable,
)

__all__ = [
    "ObjectInfo",
    "ObjectNotFound",
    "ObjectStore",
    "PreconditionFailed",
    "RangeNotSatisfiable",
]
