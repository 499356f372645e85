"""The episode relationship graph: storage, validation, indexes and the delete cascade.

memlake.features lists its table (SPEC) and its episode-delete cleanup (cascade_delete, which
removes a deleted episode's relationships in the same transaction).
"""

from memlake.relationships.index import EdgeView, RelIndex, relationship_index
from memlake.relationships.ops import ORDER_TYPES, NewRelationship, add, cascade_delete, remove
from memlake.relationships.table import SPEC, TABLE, Rel, public_view

__all__ = [
    "ORDER_TYPES",
    "TABLE",
    "EdgeView",
    "NewRelationship",
    "Rel",
    "RelIndex",
    "SPEC",
    "add",
    "cascade_delete",
    "public_view",
    "relationship_index",
    "remove",
]
