"""Object stores: one protocol, a local-directory and an S3 implementation."""

from memlake.store.base import ObjectInfo, ObjectNotFound, ObjectStore, PreconditionFailed
from memlake.store.counting import CountingStore

__all__ = ["CountingStore", "ObjectInfo", "ObjectNotFound", "ObjectStore", "PreconditionFailed"]
