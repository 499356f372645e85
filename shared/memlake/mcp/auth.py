"""Bearer tokens -> tenants for the local server. Tokens are kept only as SHA-256 digests."""

from __future__ import annotations

import hashlib
import hmac

from memlake.context import Principal
from memlake.errors import ConfigurationError
from memlake.ids import TENANT_PATTERN

DEFAULT_TENANT = "default"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ApiKeys:
    def __init__(self, pairs: tuple[str, ...]) -> None:
        self._by_digest: dict[str, str] = {}
        for pair in pairs:
            token, sep, tenant = pair.rpartition(":")
            if not sep or not token or not TENANT_PATTERN.match(tenant):
                raise ConfigurationError(
                    "MEMLAKE_API_KEYS must be 'token:tenant' pairs separated by commas;"
                    " tenants are lowercase letters, digits, '_' or '-'"
                )
            self._by_digest[token_digest(token)] = tenant

    @property
    def enabled(self) -> bool:
        return bool(self._by_digest)

    def authenticate(self, authorization: str | None) -> Principal | None:
        """The principal for an Authorization header, or None when it is missing or wrong."""
        if not self.enabled:
            return Principal(DEFAULT_TENANT, "anonymous")
        if not authorization:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        digest = token_digest(token.strip())
        for known, tenant in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return Principal(tenant, digest[:12])
        return None
