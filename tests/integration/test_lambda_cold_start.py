"""What a cold MCP Lambda imports: a fresh interpreter runs the handler (the cold-start
benchmark's child, tests/bench/cold_start_bench.py) and reports the heavy modules it loaded."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> Any:
    path = ROOT / "tests/bench/cold_start_bench.py"
    spec = importlib.util.spec_from_file_location("cold_start_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cold() -> dict[str, Any]:
    return _bench().run_once(tracing=False)  # type: ignore[no-any-return]


def test_initialize_loads_no_heavy_module(cold: dict[str, Any]) -> None:
    # faiss, bm25s, tokenizers, the mcp SDK, X-Ray (tracing is off): none for a handshake
    assert cold["heavy_after_initialize"] == []


def test_tools_list_never_loads_the_mcp_sdk(cold: dict[str, Any]) -> None:
    assert "mcp" not in cold["heavy_after_tools_list"]
    assert cold["tools"] >= 4


def test_tools_list_loads_no_heavy_module(cold: dict[str, Any]) -> None:
    assert cold["heavy_after_tools_list"] == []


def test_tracer_only_when_the_function_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    from memlake.observability import NoTracer, make_tracer, tracing_enabled

    monkeypatch.delenv("AWS_XRAY_DAEMON_ADDRESS", raising=False)
    monkeypatch.delenv("POWERTOOLS_TRACE_DISABLED", raising=False)
    assert not tracing_enabled() and isinstance(make_tracer("t"), NoTracer)
    monkeypatch.setenv("AWS_XRAY_DAEMON_ADDRESS", "169.254.79.129:2000")  # what Lambda sets
    assert tracing_enabled()
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    assert not tracing_enabled() and isinstance(make_tracer("t"), NoTracer)


def test_tracing_run_loads_xray_only_then() -> None:
    traced = _bench().run_once(tracing=True)
    assert traced["heavy_after_initialize"] == ["aws_xray_sdk"]
