"""Transactions: staged row changes over a snapshot, validated before they commit.

A change function receives a Transaction, reads through it (its own staged rows first) and
stages puts and deletes. The engine re-runs the function against the newest snapshot when a
conditional manifest write loses a race, so validation always sees the state it commits onto.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from typing import Any

from memlake.lake.snapshot import Snapshot

_TOMBSTONE: dict[str, Any] = {"__tombstone__": True}


class Transaction:
    def __init__(self, snapshot: Snapshot, parent: Transaction | None = None) -> None:
        self.snapshot = snapshot
        self._parent = parent
        self.staged: dict[str, dict[str, dict[str, Any]]] = {}
        self._extra: dict[str, Any] | None = None

    # reading ---------------------------------------------------------------------------
    def _lookup_staged(self, table: str, row_id: str) -> dict[str, Any] | None:
        txn: Transaction | None = self
        while txn is not None:
            hit = txn.staged.get(table, {}).get(row_id)
            if hit is not None:
                return hit
            txn = txn._parent
        return None

    def get(self, table: str, row_id: str) -> dict[str, Any] | None:
        staged = self._lookup_staged(table, row_id)
        if staged is not None:
            return None if staged is _TOMBSTONE else dict(staged)
        return self.snapshot.table(table).get(row_id)

    def exists(self, table: str, row_id: str) -> bool:
        staged = self._lookup_staged(table, row_id)
        if staged is not None:
            return staged is not _TOMBSTONE
        loc = self.snapshot.table(table).locate(row_id)
        return loc is not None and loc.is_live

    def find(self, table: str, row_id: str) -> dict[str, Any] | None:
        """get without the table's id index (TableView.find): for large tables that a write
        would otherwise re-index."""
        staged = self._lookup_staged(table, row_id)
        if staged is not None:
            return None if staged is _TOMBSTONE else dict(staged)
        found = self.snapshot.table(table).find(row_id)
        return found[1] if found is not None and found[0].is_live else None

    def where(self, table: str, column: str, values: Iterable[str]) -> list[dict[str, Any]]:
        """Live rows whose `column` is one of `values` (a scan, TableView.where); staged rows
        win over the snapshot's."""
        wanted = list(dict.fromkeys(values))
        if not wanted:
            return []
        found = self.snapshot.table(table).scan(column, wanted)
        wanted_set = set(wanted)
        for rid, row in self.staged_rows(table):
            found.pop(rid, None)
            if row is not None and row.get(column) in wanted_set:
                found[rid] = row
        return list(found.values())

    def staged_rows(self, table: str) -> Iterator[tuple[str, dict[str, Any] | None]]:
        """(id, row or None for a delete) for every row staged here and in parent transactions."""
        chain: list[Transaction] = []
        txn: Transaction | None = self
        while txn is not None:
            chain.append(txn)
            txn = txn._parent
        merged: dict[str, dict[str, Any]] = {}
        for txn in reversed(chain):
            merged.update(txn.staged.get(table, {}))
        for rid, row in merged.items():
            yield rid, (None if row is _TOMBSTONE else row)

    # writing ---------------------------------------------------------------------------
    def put(self, table: str, row: dict[str, Any]) -> None:
        self.staged.setdefault(table, {})[row["id"]] = dict(row)

    def delete(self, table: str, row_id: str) -> None:
        self.staged.setdefault(table, {})[row_id] = _TOMBSTONE

    @property
    def extra(self) -> dict[str, Any]:
        """Manifest-level state (copy on first access); changes commit with the rows."""
        if self._extra is None:
            base = self._parent.extra if self._parent is not None else self.snapshot.extra
            self._extra = copy.deepcopy(base)
        return self._extra

    def child(self) -> Transaction:
        return Transaction(self.snapshot, parent=self)

    def merge_into_parent(self) -> None:
        if self._parent is None:
            raise RuntimeError("not a child transaction")
        for table, rows in self.staged.items():
            self._parent.staged.setdefault(table, {}).update(rows)
        if self._extra is not None:
            self._parent._extra = self._extra

    def has_changes(self) -> bool:
        extra_changed = self._extra is not None and self._extra != self.snapshot.extra
        return any(self.staged.values()) or extra_changed

    def rows_for_segment(self, table: str) -> list[dict[str, Any]]:
        out = []
        for rid, row in self.staged.get(table, {}).items():
            out.append({"id": rid, "_deleted": True} if row is _TOMBSTONE else row)
        return out
