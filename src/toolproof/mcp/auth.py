"""Who is calling over HTTP: bearer tokens mapped to principals, or OAuth access tokens (resource-server mode).

Both plug into the SDK's own auth: a `TokenVerifier` behind its `BearerAuthBackend` and `RequireAuthMiddleware`
(401 with `WWW-Authenticate` when the token is missing or wrong), and in OAuth mode its protected-resource
metadata route. What the SDK does not do is toolproof's policy, kept here: the principal of a call is the
authenticated identity (a `_meta` principal that differs is refused), and a conversation id belongs to the
identity that first used it (another identity sending it is refused, never served the first one's results).
Token values are compared in constant time and never logged, stored or echoed.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings

from ..contract.context import CallContext
from ..contract.errors import PermissionDenied

MIN_TOKEN_LENGTH: Final = 16
#: How many conversation owners one server remembers (about 200 bytes each); the oldest is forgotten first.
MAX_CONVERSATIONS: Final = 100_000
LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")
_PRINCIPAL_RE: Final = re.compile(r"^[^\s\x00-\x1f\x7f]{1,200}$")


class InsecureBind(ValueError):
    """Serving HTTP on a non-loopback address without authentication was asked for."""


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenTable(TokenVerifier):
    """Static bearer tokens, each mapped to a principal. Only SHA-256 digests are kept in memory.

    Text format (a file, or an environment variable): one `PRINCIPAL TOKEN` per line (or per comma), `#`
    starts a comment. Tokens are at least 16 characters and unique.
    """

    def __init__(self, entries: Mapping[str, str]) -> None:
        """`entries` maps token -> principal (checked here; a bad entry never names its token)."""
        table: list[tuple[bytes, str]] = []
        for token, principal in entries.items():
            _check_entry(token, principal, where="a token entry")
            table.append((_digest(token), principal))
        if not table:
            raise ValueError("no bearer tokens were given")
        self._table = tuple(table)

    @classmethod
    def from_text(cls, text: str, *, source: str) -> TokenTable:
        entries: dict[str, str] = {}
        for number, line in enumerate(re.split(r"[\n,]", text), start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise ValueError(f"{source}, entry {number}: expected `PRINCIPAL TOKEN` (two words)")
            principal, token = parts
            _check_entry(token, principal, where=f"{source}, entry {number}")
            if token in entries:
                raise ValueError(f"{source}, entry {number}: the same token is given twice")
            entries[token] = principal
        if not entries:
            raise ValueError(f"{source} holds no `PRINCIPAL TOKEN` entries")
        return cls(entries)

    @classmethod
    def from_file(cls, path: str | Path) -> TokenTable:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"cannot read the tokens file {str(path)!r}: {exc.strerror}") from None
        return cls.from_text(text, source=f"tokens file {str(path)!r}")

    @classmethod
    def from_env(cls, name: str, environ: Mapping[str, str] | None = None) -> TokenTable:
        value = (os.environ if environ is None else environ).get(name)
        if not value:
            raise ValueError(f"the environment variable {name} (bearer tokens) is not set or empty")
        return cls.from_text(value, source=f"environment variable {name}")

    async def verify_token(self, token: str) -> AccessToken | None:
        """The principal's access token, or None. Every entry is compared (constant time, no early exit)."""
        digest = _digest(token)
        found: str | None = None
        for known, principal in self._table:
            if hmac.compare_digest(known, digest):
                found = principal
        if found is None:
            return None
        # The SDK's model wants the token; keep only a marker, so no repr or log line can show it.
        return AccessToken(token="[bearer]", client_id=found, scopes=[], subject=found)

    def __len__(self) -> int:
        return len(self._table)

    def take_entries(self, other: TokenTable) -> None:
        """Serve `other`'s tokens from now on (a rotation read on reload; sessions stay open, each request
        is checked against the table in force when it arrives)."""
        self._table = other._table

    def __repr__(self) -> str:
        return f"TokenTable({len(self._table)} tokens)"


def _check_entry(token: str, principal: str, *, where: str) -> None:
    if not isinstance(principal, str) or not _PRINCIPAL_RE.match(principal):
        raise ValueError(f"{where}: the principal must be 1-200 printable characters without spaces")
    if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH or not token.isprintable() or " " in token:
        raise ValueError(f"{where}: a token must be at least {MIN_TOKEN_LENGTH} printable characters, no spaces")


@dataclass(frozen=True)
class HttpAuth:
    """How an HTTP server authenticates callers: a `TokenVerifier` (bearer table, or an OAuth introspection
    verifier) and, for OAuth resource-server mode, the SDK's `AuthSettings` (issuer, resource URL, scopes)."""

    verifier: TokenVerifier
    settings: AuthSettings | None = None
    max_conversations: int = MAX_CONVERSATIONS

    @classmethod
    def bearer(cls, tokens: TokenTable | Mapping[str, str]) -> HttpAuth:
        """Static bearer tokens (`TokenTable`, or a mapping token -> principal)."""
        return cls(tokens if isinstance(tokens, TokenTable) else TokenTable(tokens))

    @classmethod
    def oauth(
        cls,
        verifier: TokenVerifier,
        *,
        issuer_url: str,
        resource_url: str,
        required_scopes: Iterable[str] = (),
    ) -> HttpAuth:
        """OAuth 2.1 resource server (the MCP authorization spec): tokens issued by `issuer_url` for
        `resource_url`, checked by `verifier` (e.g. `IntrospectionVerifier`); the SDK serves
        `/.well-known/oauth-protected-resource` and answers 401 with its URL."""
        settings = AuthSettings(
            issuer_url=issuer_url,  # type: ignore[arg-type]  # pydantic parses the URL
            resource_server_url=resource_url,  # type: ignore[arg-type]
            required_scopes=list(required_scopes) or None,
            validate_token_resource=True,
        )
        return cls(verifier, settings)

    def sdk_settings(self) -> AuthSettings:
        """The `AuthSettings` the SDK needs to install its bearer middleware (bearer mode: a local placeholder)."""
        if self.settings is not None:
            return self.settings
        return AuthSettings(issuer_url="http://127.0.0.1", resource_server_url=None)  # type: ignore[arg-type]


def principal_of(token: AccessToken) -> str:
    """The principal an access token stands for: its subject, else its client id."""
    return token.subject or token.client_id


def authenticated_token(request: Any) -> AccessToken | None:
    """The access token the SDK's middleware verified for this HTTP request, if any."""
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, Mapping) else None
    return user.access_token if isinstance(user, AuthenticatedUser) else None


@dataclass
class IdentityBinding:
    """Binds each call to the authenticated identity: the principal, and who owns a conversation id."""

    max_conversations: int = MAX_CONVERSATIONS
    _owners: OrderedDict[str, str] = field(default_factory=OrderedDict)

    def bind(self, context: CallContext, request: Any) -> CallContext:
        """`context` with the authenticated principal; `PermissionDenied` when the call claims another
        principal, or a conversation another identity opened, or carries no verified identity."""
        token = authenticated_token(request)
        if token is None:
            raise PermissionDenied("This server requires an authenticated caller; none was verified.",
                                   code="NOT_AUTHENTICATED", hint="Tell a person: the client sent no valid token.")
        principal = principal_of(token)
        if context.principal is not None and context.principal != principal:
            raise PermissionDenied(
                "The request's _meta names a principal other than the authenticated one; it is refused.",
                code="PRINCIPAL_MISMATCH", hint="Do not set dev.toolproof/principal; the token decides who calls.")
        if context.conversation_id is not None:
            self._claim(context.conversation_id, principal)
        return context.with_updates(principal=principal)

    def _claim(self, conversation: str, principal: str) -> None:
        owner = self._owners.get(conversation)
        if owner is not None and owner != principal:
            raise PermissionDenied(
                "This conversation id was opened by another caller; it cannot be used with these credentials.",
                code="CONVERSATION_NOT_YOURS", hint="Start a new conversation id.")
        self._owners[conversation] = principal
        self._owners.move_to_end(conversation)
        while len(self._owners) > self.max_conversations:
            self._owners.popitem(last=False)


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback IP addresses (the only binds allowed without authentication)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, auth: HttpAuth | None) -> None:
    """Refuse a non-loopback bind without authentication (`InsecureBind`)."""
    if auth is None and not is_loopback(host):
        raise InsecureBind(
            f"refusing to serve MCP over HTTP on {host} without authentication: anyone who can reach it could "
            "call every tool as any principal. Give bearer tokens (--tokens-file FILE or --tokens-env VAR; "
            "in Python, HttpAuth), or bind 127.0.0.1."
        )


def transport_security(host: str, extra_hosts: Iterable[str] = ()) -> TransportSecuritySettings:
    """DNS-rebinding protection on every bind: Host must be a loopback name, the bound address, or one of
    `extra_hosts` (the names clients use); a browser Origin must be one of the same."""
    names = list(LOOPBACK_NAMES)
    bound = f"[{host}]" if ":" in host and not host.startswith("[") else host
    if not is_loopback(host) and host not in ("0.0.0.0", "::", "[::]"):
        names.append(bound)
    names.extend(h for h in extra_hosts if h not in names)
    hosts = [form for name in names for form in (name, f"{name}:*")]
    origins = [f"{scheme}://{form}" for scheme in ("http", "https") for form in hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)
