"""Listings that answer what is readable when a segment is damaged (issue 47, revisiting
decision 2701).

Decision 2701 made a read of a whole table (list_episodes, find_episodes' listing,
find_concepts, get_pending_threads) fail with `corrupt_object` when one of its segments could
not be read: an agent could not tell a short list from a complete one. One damaged object then
hid every episode of the tenant from every listing until an operator ran `memlake repair`.
These reads now answer from the readable segments and say so in the answer's `unreadable`
note: how many segments of which table, what that means for the rows, and what repairs it.
Reads that need one row (get_episode, a write's lookup) still raise when the damaged segment
may hold it, and a transient store error is still an error (only CorruptObject is contained).
"""

from __future__ import annotations

from memlake.lake.snapshot import TableView

#: the note's last words: what an operator runs (decision 2701)
REPAIR_HINT = "run `memlake check`, then `memlake repair --apply`"


def unreadable_note(*views: TableView) -> str | None:
    """What a partial read of `views` left out (None: every segment was read). Call it after
    the read: a view learns which segments it cannot read as it reads them."""
    parts = []
    for view in views:
        if view.unreadable:
            n, total = len(view.unreadable), len(view.segments)
            parts.append(f"{n} of {total} segments of {view.name}")
    if not parts:
        return None
    return (
        f"Damaged storage: {', '.join(parts)} could not be read. Rows written there are"
        " missing, and a row changed or deleted there may show an older version; "
        + REPAIR_HINT
        + "."
    )
