"""Who is asking: gateway tokens to tenants, compared in constant time.

Each configured token is a tenant. A tenant is stored and logged by a digest of its token (never
the token), so the store and the access log hold nothing a client could authenticate with. With
no tokens configured (a loopback gateway) every request is the one anonymous tenant "".
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence


def tenant_id(token: str) -> str:
    return "gw:" + hashlib.sha256(b"thoughtline-gateway-tenant\0" + token.encode()).hexdigest()[:24]


class Tenants:
    """The configured tokens; ``authenticate`` maps a presented token to a tenant."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self._tokens = [(t.encode(), tenant_id(t)) for t in tokens]

    @property
    def required(self) -> bool:
        return bool(self._tokens)

    def authenticate(self, token: str | None) -> str | None:
        """The tenant of a presented token (see ``faces.token_of``); None when missing or wrong."""
        if not self._tokens:
            return ""
        if not token or not token.strip():
            return None
        given = token.strip().encode()
        found = None
        for known, tenant in self._tokens:  # no early exit: time does not depend on which
            if hmac.compare_digest(known, given):
                found = tenant
        return found
