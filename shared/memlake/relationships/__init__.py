"""The episode relationship graph: storage, validation, indexes and the delete cascade.

Importing this package (memlake.features lists it) registers the "relationships" and "audit"
tables and the episode-delete cleanup that removes a deleted episode's relationships in the
same transaction.
"""

from memlake.episodes import ON_DELETE
from memlake.relationships.index import EdgeView, RelIndex, relationship_index
from memlake.relationships.ops import ORDER_TYPES, NewRelationship, add, cascade_delete, remove
from memlake.relationships.table import TABLE, Rel, public_view

if cascade_delete not in ON_DELETE:
    ON_DELETE.append(cascade_delete)

__all__ = [
    "ORDER_TYPES",
    "TABLE",
    "EdgeView",
    "NewRelationship",
    "Rel",
    "RelIndex",
    "add",
    "cascade_delete",
    "public_view",
    "relationship_index",
    "remove",
]
