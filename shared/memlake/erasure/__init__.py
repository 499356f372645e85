"""Erasure: a deleted episode (or thread) leaves every object of the tenant within one
maintenance pass (issue 48, docs/decisions/4801-erasure.md).

- `requests`: the `erasures` table. delete_episode and delete_thread stage a request in their
  own transaction; a pass turns it into a receipt.
- `rules`: which rows of which table hold an erased target, and what becomes of them.
- `rewrite`: the segments and index shards that hold them, rewritten without them and swapped
  in by one compare-and-swap commit.
- `run`: the pass (rewrite, cut the history, delete the old objects, write the receipts).
- `holds` and `verify`: whether an object still holds an erased target (`memlake check
  --erased`).
- `retention`: episodes past a tenant's retention deleted (and so erased) by maintenance.
"""
