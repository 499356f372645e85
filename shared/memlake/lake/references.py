"""What a tenant's retained manifests name, kept between GC passes (issue 47's soak).

GC keeps every object a manifest of the history window (7 days) names, so it must know the
union of those manifests' keys. Reading every retained manifest on every pass made a pass cost
grow with the window: in the soak (a write every ~60 ms), 14,357 manifests (2.4 GB) after 17
minutes, each pass longer than the last. Manifests never change once stored and versions only
grow, so a process folds each version in once: for every key, the newest version naming it.
A key is named by a retained manifest exactly when that version is at or above the oldest
retained one (the floor: retained versions are contiguous from it up). A process that starts
(a Lambda's first pass) folds the window once, as every pass did before. A manifest damaged
after this process folded it in no longer stops this process's GC (it knows what that one
named); a fresh process refuses, as before (decision 2701).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from memlake.lake.manifest import Manifest
from memlake.pools import STORE_IO

#: manifests read at once by `fold` (on S3 each read is a round trip: a fresh process's first
#: pass reads the whole history window)
FOLD_BATCH = 32


@dataclass
class References:
    #: the newest version folded in (0: none)
    upto: int = 0
    #: object key -> the newest folded version that names it
    newest: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: versions an erasure cut (markers that name nothing: memlake.lake.gc.cut_history)
    cut: set[int] = field(default_factory=set)

    def fold(self, versions: Iterable[int], load: Callable[[int], Manifest | None]) -> None:
        """Fold in the versions above `upto` (in order). A manifest that cannot be read raises
        (GC then refuses, as before: it cannot know what that one names); `load` returns None
        for a version an erasure cut."""
        todo = sorted(v for v in versions if v > self.upto)
        for at in range(0, len(todo), FOLD_BATCH):  # read side by side, folded in order
            batch = todo[at : at + FOLD_BATCH]
            for version, manifest in zip(batch, STORE_IO.get().map(load, batch), strict=True):
                if manifest is None:
                    self.cut.add(version)
                else:
                    for key in manifest.all_keys():
                        self.newest[key] = version
                self.upto = version

    def named_since(self, key: str, floor: int) -> bool:
        """Whether a manifest at or above `floor` names `key`."""
        return self.newest.get(key, -1) >= floor

    def forget(self, keys: Iterable[str]) -> None:
        """Keys whose objects are gone (GC deleted them)."""
        for key in keys:
            self.newest.pop(key, None)

    def prune(self, floor: int, present: set[str]) -> None:
        """Drop what no retained manifest names and the store no longer holds (keys a
        manifest's extra names that are not objects, objects removed by others)."""
        gone = [k for k, v in self.newest.items() if v < floor and k not in present]
        self.forget(gone)
