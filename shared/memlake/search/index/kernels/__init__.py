"""The per-shard hot loops of a search, compiled (numba, nogil) or in numpy (decision 2502).

`active()` is the implementation a search calls: numba_kernels (with BM25's kernels from
numba_bm25, a file of their own: numba caches a function by its file, so a kernel and what it
calls stay in one) when numba imports and its kernels load, else numpy_twins; both have the
same functions with the same arguments and give the same results (tests/unit/test_kernels.py
holds them to it; BM25's compiled passage scores are exact for its top docs only). Which one
is one setting, MEMLAKE_KERNELS (memlake.config.kernel_settings):

- "auto" (default): numba when its kernels are in the cache already (`warm` compiled them:
  the image build, infra/setup.sh, `memlake warm-kernels`), so that no request compiles,
  loaded on a thread of their own after the first search, which runs on numpy's; otherwise numpy,
  said once in the log (also when another library's njit set numba up for this host's CPU
  before the kernels could ask for the portable one);
- "numba": numba, compiling what the cache lacks at the first search (seconds); numpy only when
  numba cannot import or compile, said in the log;
- "numpy": numpy only (numba is never imported).

numba keeps the compiled code in the kernel cache directory (MEMLAKE_KERNEL_CACHE_DIR; /tmp's
in a Lambda function, whose code directory is read-only), for a CPU named "generic" unless
NUMBA_CPU_NAME says otherwise, so a cache built on one machine loads on another (Lambda's
hosts differ). When that directory has no cache yet and MEMLAKE_KERNEL_CACHE_SEED names one
built ahead (the image's), it is copied there first. The dispatchers then refuse to compile
anything more: a call with other argument types is a TypeError in tests, never a compile.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import threading
import time
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import Any

from memlake.config import KernelSettings, kernel_settings
from memlake.search.index.kernels import numpy_twins

log = logging.getLogger(__name__)

#: what `load` found: the module in use, why, and how long numba's import and load took
_state: dict[str, Any] = {}
_lock = threading.Lock()  # held while loading
_start = threading.Lock()  # held while starting the loading thread (never while loading)
_loading: list[threading.Thread] = []
_configured: list[str] = []  # the CPU name this process set numba up for (once)
MARKER = "memlake-kernels-{}.json"


def active() -> ModuleType:
    """The kernels a search calls now (numba_kernels or numpy_twins). "auto" never makes a
    search wait: numpy's until numba's are loaded (`load_later`, after a process's first
    search, on a thread of their own; the same results either way), so a cold process's first
    search pays neither numba's ~0.15 s import nor its ~0.3 s load; "numba" and "numpy" load
    here, at the first call."""
    got = _state.get("module")
    if got is not None:
        return got  # type: ignore[no-any-return]
    s = kernel_settings()
    return numpy_twins if s.mode == "auto" else load(s)


def load_later() -> None:
    """Start loading the kernels on a thread of their own unless that has begun (hybrid.search
    calls it when a search is done: measured in new processes, loading beside the first search
    made it ~0.3 s slower on two busy cores, decision 2502)."""
    if "module" in _state or _loading:
        return
    with _start:
        if not _loading:
            # not a daemon: the interpreter's exit waits for it (numba's C++ cut off mid-load
            # at exit could abort the process); auto never compiles, so that is < 1 s
            thread = threading.Thread(target=load, name="memlake-kernels")
            _loading.append(thread)
            thread.start()


def wait() -> ModuleType:
    """The kernels once loaded (loading them now if no search has: benches and tests)."""
    load_later()
    for thread in list(_loading):
        thread.join()
    return active()


def which() -> str:
    """ "numba" or "numpy": the kernels in use once loaded (waits for a load under way)."""
    return "numba" if wait() is not numpy_twins else "numpy"


def report() -> dict[str, Any]:
    """What loading found: kernels in use, the reason, seconds spent, cache directory."""
    wait()
    return {k: v for k, v in _state.items() if k != "module"}


def reset() -> None:
    """Forget the choice (tests switch MEMLAKE_KERNELS and load again; compiled code stays)."""
    for thread in list(_loading):
        thread.join()
    with _start, _lock:
        _state.clear()
        _loading.clear()


def load(settings: KernelSettings | None = None, compile_missing: bool | None = None) -> ModuleType:
    """Choose and load the kernels (see the module's doc) now. `compile_missing`: compile what
    the cache lacks (default: only when MEMLAKE_KERNELS is "numba")."""
    with _lock:
        if "module" in _state:
            return _state["module"]  # type: ignore[no-any-return]
        s = settings or kernel_settings()
        module, why = numpy_twins, "MEMLAKE_KERNELS=numpy"
        if s.mode != "numpy":
            compiling = s.mode == "numba" if compile_missing is None else compile_missing
            try:
                module, why = _load_numba(s, compiling)
            except Exception as e:  # noqa: BLE001  (no numba, a failed compile or cache: numpy)
                module, why = numpy_twins, f"numba kernels unavailable ({type(e).__name__}: {e})"
                log.warning("search kernels: numpy; %s", why)
            else:
                if module is numpy_twins:
                    log.info("search kernels: numpy; %s", why)
        _state.update(module=module, reason=why)
        return module


def warm(settings: KernelSettings | None = None) -> dict[str, Any]:
    """Compile every kernel for its signature into the cache (or load it from there) and mark
    the cache ready for `auto`: the image build and infra/setup.sh run this (`memlake
    warm-kernels`). Raises when numba cannot import or compile."""
    reset()
    s = settings or kernel_settings()
    with _lock:
        module, why = _load_numba(s, True)
        _state.update(module=module, reason=why)
    return report()


def _load_numba(s: KernelSettings, compiling: bool) -> tuple[ModuleType, str]:
    cache = Path(s.cache_dir)
    marker = MARKER.format(_fingerprint(s.cpu_name))
    _state["cache_dir"] = str(cache)
    if not (cache / marker).exists() and s.cache_seed and (Path(s.cache_seed) / marker).exists():
        shutil.copytree(s.cache_seed, cache, dirs_exist_ok=True)  # the image's, built ahead
    if not compiling and not (cache / marker).exists():
        return numpy_twins, f"numba kernels not in {cache}: run `memlake warm-kernels`"
    started = time.perf_counter()
    import numba

    _state["import_s"] = round(time.perf_counter() - started, 3)
    from numba.core import registry

    cache.mkdir(parents=True, exist_ok=True)
    config: Any = numba.config
    config.CACHE_DIR = str(cache)  # read when a cached dispatcher is made (the import below)
    # numba sets its compiler up (for config's CPU) when the first njit function is made; a
    # cached property, so look without making it
    if "_toplevel_target_context" not in vars(registry.cpu_target):
        config.CPU_NAME = s.cpu_name  # the cache is keyed by it: "generic" runs anywhere
        if s.cpu_name == "generic":
            config.CPU_FEATURES = ""
        _configured.append(s.cpu_name)
    elif not compiling and s.cpu_name not in _configured:  # another library's njit came first
        return numpy_twins, "numba was set up for this CPU before the kernels loaded"
    from memlake.search.index.kernels import numba_kernels as nk

    t0 = time.perf_counter()
    misses = 0
    for name, sig in nk.SIGNATURES.items():
        dispatcher = getattr(nk, name)
        if not dispatcher.signatures:  # (loaded already in this process: nothing to do)
            dispatcher.compile(sig)
            dispatcher.disable_compile()  # no request compiles (a wrong type: a TypeError)
            misses += sum(dispatcher.stats.cache_misses.values())
    _state.update(load_s=round(time.perf_counter() - t0, 3), compiled=misses)
    if misses and not compiling:
        log.warning("search kernels: %d compiled although %s says they are cached", misses, marker)
    if not (cache / marker).exists():
        (cache / marker).write_text(json.dumps({"numba": numba.__version__}) + "\n")
    return nk, "numba kernels compiled" if misses else "numba kernels loaded"


def _fingerprint(cpu_name: str) -> str:
    """What a cache of these kernels depends on: their source files (their paths too: numba
    keys its cache by the source folder), numba's version and the CPU name it compiles for;
    known without importing numba (a process that will not use it does not pay the import)."""
    digest = hashlib.sha256()
    for name in ("numba_kernels.py", "numba_bm25.py"):
        path = (Path(__file__).parent / name).resolve()
        digest.update(str(path).encode() + path.read_bytes())
    digest.update(f"{version('numba')} {cpu_name}".encode())
    return digest.hexdigest()[:16]
