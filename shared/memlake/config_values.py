"""How one configuration value is checked and normalised, whatever it came from: an
environment variable (memlake.config reads every one), a CLI flag or Settings(...) in code.
Pure functions of the value: nothing here reads the environment."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from memlake.errors import ConfigurationError

#: what `MEMLAKE_TOOLSETS` / `serve --toolsets` may name (memlake.tools.registry.TOOLSETS)
TOOLSET_NAMES = ("episodes", "layers", "graph", "all")


def parse_toolsets(raw: str, *, source: str = "MEMLAKE_TOOLSETS") -> tuple[str, ...]:
    """Comma-separated toolset names -> a canonical tuple; ("all",) when empty or when "all"
    is among them. An unknown name is a ConfigurationError naming the choices."""
    names = [p.strip().lower() for p in raw.split(",") if p.strip()]
    unknown = [n for n in names if n not in TOOLSET_NAMES]
    if unknown:
        raise ConfigurationError(
            f"{source}: unknown toolset {unknown[0][:40]!r}; choose from"
            f" {', '.join(TOOLSET_NAMES)} (comma-separated, e.g. episodes,layers)"
        )
    if not names or "all" in names:
        return ("all",)
    return tuple(n for n in TOOLSET_NAMES if n in names)


def checked_url(name: str, raw: str, *, issuer: bool = False) -> str:
    """An absolute http(s) URL without query or fragment, trailing "/" dropped; "" stays "".

    An issuer is https (plain http only on loopback, for a development authorization server)
    and may have a path (Cognito's ends in the pool id). MEMLAKE_PUBLIC_URL is an origin, no
    path: the MCP endpoint is its /mcp."""
    if not raw:
        return ""
    what = "issuer URLs" if issuer else "an origin like https://memlake.example.com"
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError:
        raise ConfigurationError(f"{name} must be {what}, got {raw!r}") from None
    host = parts.hostname or ""
    loopback = host == "localhost" or is_loopback_ip(host)
    ok = (
        (parts.scheme == "https" or (parts.scheme == "http" and (loopback or not issuer)))
        and bool(host)
        and not parts.query
        and not parts.fragment
        and "@" not in parts.netloc
        and raw.isascii()
        and not any(c in raw for c in ' "\\<>{}|^`')  # it goes into a quoted header value
        and (issuer or parts.path in ("", "/"))
    )
    if not ok:
        raise ConfigurationError(
            f"{name} must be {what}"
            f"{' (https; http only for localhost)' if issuer else ''}, without query or"
            f" fragment{'' if issuer else ' or path'}, got {raw!r}"
        )
    return raw.rstrip("/")


def is_loopback_ip(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_MODEL_ID = re.compile(r"[a-z0-9-]+\.[a-z0-9.-]+(:[0-9]+)?")
_MODEL_ARN = re.compile(r"arn:aws[a-z-]*:bedrock:[a-z0-9-]+:[0-9]*:[a-z-]+/[A-Za-z0-9.:/-]+")


def is_bedrock_model(model: str) -> bool:
    """A Bedrock model id (cohere.rerank-v3-5:0) or model ARN."""
    return bool(_MODEL_ID.fullmatch(model) or _MODEL_ARN.fullmatch(model))


def parse_latency(text: str) -> tuple[float, float | None]:
    """MEMLAKE_STORE_LATENCY's 'LATENCY[,BANDWIDTH]' ('25ms', '25ms,90MB/s', '0.1s, 5mb/s') as
    (seconds before a request's first byte, bytes a second; None: not given). ValueError with
    an example otherwise (memlake.store.latency models S3 with it)."""
    parts = [p.strip().lower() for p in text.split(",") if p.strip()]
    if not parts or len(parts) > 2:
        raise ValueError(f"expected 'LATENCY[,BANDWIDTH]' like '25ms,90MB/s', got {text!r}")
    first = _with_unit(parts[0], (("ms", 1e-3), ("s", 1.0)), "a latency like '25ms' or '0.025s'")
    if len(parts) == 1:
        return first, None
    units = (("gb/s", 1e9), ("mb/s", 1e6), ("kb/s", 1e3), ("b/s", 1.0))
    band = _with_unit(parts[1], units, "a bandwidth like '90MB/s'")
    if band <= 0:
        raise ValueError(f"a bandwidth like '90MB/s', got {parts[1]!r}")
    return first, band


def _with_unit(text: str, units: tuple[tuple[str, float], ...], like: str) -> float:
    for unit, scale in units:
        if text.endswith(unit):
            try:
                value = float(text[: -len(unit)])
            except ValueError:
                break
            if value < 0:
                break
            return value * scale
    raise ValueError(f"{like}, got {text!r}")
