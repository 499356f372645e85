"""Who is calling and with what: the principal, and the context every tool call runs in.

Lives outside memlake.tools so that the doors (memlake.mcp), cursors and idempotency keys can
name a caller without importing the tool layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memlake.config import Settings
    from memlake.lake import Lake
    from memlake.services import Services


@dataclass(frozen=True)
class Principal:
    """Who is calling: the tenant whose data they reach, and a non-secret token id for audit."""

    tenant: str
    token_id: str = "anonymous"


@dataclass
class ToolContext:
    """One call: the caller, the process's services (lake, settings, search) and a request id."""

    principal: Principal
    services: Services
    request_id: str = ""

    @property
    def tenant(self) -> str:
        return self.principal.tenant

    @property
    def lake(self) -> Lake:
        return self.services.lake

    @property
    def settings(self) -> Settings:
        return self.services.settings
