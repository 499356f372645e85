"""The per-shard hot loops of a search, compiled (numba, nogil) or in numpy (decision 2502).

`active()` is the implementation a search calls: numba_kernels (with BM25's kernels from
numba_bm25, a file of their own: numba caches a function by its file, so a kernel and what it
calls stay in one) when numba imports and its kernels load, else numpy_twins; both have the
same functions with the same arguments and give the same results (tests/unit/test_kernels.py
holds them to it; BM25's compiled kernel may leave out docs below a search's floor, decision
2509). Which one is one setting, MEMLAKE_KERNELS (memlake.config.kernel_settings):

- "auto" (default): numba when its kernels are in the cache already (`warm` compiled them:
  the image build, infra/setup.sh, `memlake warm-kernels`), so that no request compiles,
  loaded on a thread of their own after the first search, which runs on numpy's; otherwise numpy,
  said once in the log (also when another library's njit set numba up for this host's CPU
  before the kernels could ask for the portable one);
- "numba": numba, compiling what the cache lacks at the first search (seconds); numpy only when
  numba cannot import or compile, said in the log;
- "numpy": numpy only (numba is never imported).

numba keeps the compiled code in the kernel cache directory (MEMLAKE_KERNEL_CACHE_DIR; /tmp's
in a Lambda function, whose code directory is read-only), keyed by the CPU it is compiled for.
`memlake warm-kernels` compiles them for every level of LEVELS this architecture has (`warm`,
in a process of its own for each: numba is set up for one CPU a process). Levels are named
CPUs, not the build machine's own, so a cache built on one machine loads on another (Lambda's
hosts differ); a process loads the best level its CPU runs (`host_levels`) that the cache
holds (decision 2507). NUMBA_CPU_NAME names one CPU instead. When that directory has no cache
yet and MEMLAKE_KERNEL_CACHE_SEED names one built ahead (the image's), it is copied there
first. The dispatchers then refuse to compile anything more: a call with other argument types
is a TypeError in tests, never a compile.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
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
_loaded: set[str] = set()  # the kernels this process compiled or loaded (then: no more)
MARKER = "memlake-kernels-{}.json"
#: the CPUs the kernels are compiled for, best first: x86-64-v3 (AVX2, FMA, F16C, BMI: Intel
#: since Haswell, AMD since Excavator, every x86 Lambda host), then LLVM's "generic", which
#: runs on any CPU of the architecture. Named levels, not the host's own CPU: a cache built on
#: one machine (an image's) loads on another of the level
LEVELS = ("x86-64-v3", "generic")
#: what a CPU needs for x86-64-v3 (llvmlite's names of the host's features)
V3_FEATURES = ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")


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
    """Compile every kernel for its signature into the cache (or load it from there) for one
    CPU (settings.cpu_name, else the best level this host runs) and mark the cache ready for
    `auto`: `memlake warm-kernels` runs this once a level (`build_levels`), in a process each.
    Raises when numba cannot import or compile."""
    reset()
    s = settings or kernel_settings()
    with _lock:
        module, why = _load_numba(s, True)
        _state.update(module=module, reason=why)
    return report()


def build_levels() -> list[str]:
    """The levels `memlake warm-kernels` compiles for on this architecture (also those this
    host cannot run: an image built here may run on another)."""
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    return list(LEVELS) if x86 else ["generic"]


def host_levels() -> list[str]:
    """The levels of LEVELS this CPU runs, best first (asks llvmlite, numba's own)."""
    try:
        import llvmlite.binding as llvm

        if not llvm.get_process_triple().startswith("x86_64"):
            return ["generic"]
        features = llvm.get_host_cpu_features()
    except Exception:  # noqa: BLE001  (no llvmlite, or it cannot tell: the portable level)
        return ["generic"]
    return list(LEVELS) if all(features.get(f, False) for f in V3_FEATURES) else ["generic"]


def choose_level(s: KernelSettings, compiling: bool) -> str:
    """The CPU to set numba up for: NUMBA_CPU_NAME's when set; when compiling, the best level
    this host runs; else the best it runs that the cache (or its seed) holds."""
    if s.cpu_name:
        return s.cpu_name
    marked = [level for level in LEVELS if _marked(s, level)]
    if not marked:
        return host_levels()[0] if compiling else "generic"  # (numpy when nothing is cached)
    runs = host_levels()
    return runs[0] if compiling else next((lv for lv in runs if lv in marked), runs[-1])


def _marked(s: KernelSettings, level: str) -> bool:
    marker = MARKER.format(_fingerprint(level))
    places = [s.cache_dir] + ([s.cache_seed] if s.cache_seed else [])
    return any((Path(place) / marker).exists() for place in places if place)


def _load_numba(s: KernelSettings, compiling: bool) -> tuple[ModuleType, str]:
    cache = Path(s.cache_dir)
    level = choose_level(s, compiling)
    marker = MARKER.format(_fingerprint(level))
    _state.update(cache_dir=str(cache), level=level)
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
        config.CPU_NAME = level  # the cache is keyed by it (and the features)
        if level in LEVELS:
            config.CPU_FEATURES = ""  # the level's own, not this host's: the key is portable
        _configured.append(level)
    elif not compiling and level not in _configured:  # another library's njit came first
        return numpy_twins, "numba was set up for this CPU before the kernels loaded"
    from memlake.search.index.kernels import numba_kernels as nk

    t0 = time.perf_counter()
    misses = 0
    for name, sig in nk.SIGNATURES.items():
        dispatcher = getattr(nk, name)
        if name not in _loaded:  # (loaded already in this process: nothing to do)
            # each kernel's own signature, even where a caller compiled it already for its
            # argument types (bm25_top calls best_passages with arrays of its own): only this
            # compile puts that signature in the cache, and the next process would compile it
            dispatcher.compile(sig)
            dispatcher.disable_compile()  # no request compiles (a wrong type: a TypeError)
            misses += sum(dispatcher.stats.cache_misses.values())
            _loaded.add(name)
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
