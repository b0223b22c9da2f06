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
import logging
import os
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..contract._context import CallContext
from ..contract._errors import PermissionDenied

log = logging.getLogger("toolproof")

MIN_TOKEN_LENGTH: Final = 16
#: How many conversation owners one server remembers (about 200 bytes each); the oldest is forgotten first.
MAX_CONVERSATIONS: Final = 100_000
LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")
_PRINCIPAL_RE: Final = re.compile(r"^[^\s\x00-\x1f\x7f]{1,200}$")
# `name[:port]` in a Host header: a bracketed IPv6 address or a DNS name / IPv4 address, nothing else.
_HOST_HEADER: Final = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::([0-9]{1,5}))?")


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


class IntrospectionVerifier(TokenVerifier):
    """OAuth access tokens checked at the authorization server's RFC 7662 introspection endpoint.

    Each request's token is POSTed to `endpoint` (as this resource server, with HTTP Basic `client_id` /
    `client_secret` when given); an `active` answer becomes the SDK's `AccessToken` (subject, client id,
    scopes, expiry, audience as the resource), anything else (inactive, another issuer, an error, no answer
    within `timeout_s`) is no token: the SDK answers 401. The endpoint must be https, or http on loopback."""

    def __init__(
        self,
        endpoint: str,
        *,
        issuer: str | None = None,
        resource_url: str | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        timeout_s: float = 5.0,
    ) -> None:
        parts = urlsplit(endpoint)
        if parts.scheme != "https" and not (parts.scheme == "http" and is_loopback(parts.hostname or "")):
            raise ValueError(f"the introspection endpoint must be https (or http on loopback), got {endpoint!r}")
        if (client_id is None) != (client_secret is None):
            raise ValueError("give both client_id and client_secret for the introspection endpoint, or neither")
        self.endpoint, self.issuer, self.resource_url = endpoint, issuer, resource_url
        self._client = None if client_id is None else (client_id, client_secret or "")
        self.timeout_s = timeout_s

    async def verify_token(self, token: str) -> AccessToken | None:
        import httpx

        try:
            async with httpx.AsyncClient(timeout=self.timeout_s, auth=self._client) as http:
                answer = await http.post(self.endpoint, data={"token": token, "token_type_hint": "access_token"},
                                         headers={"accept": "application/json"})
            data = answer.json() if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as exc:
            log.warning("toolproof: the token introspection endpoint %s failed: %s", self.endpoint,
                        type(exc).__name__)
            return None
        if not isinstance(data, dict) or data.get("active") is not True:
            return None
        issuer = data.get("iss")
        if self.issuer is not None and issuer is not None and str(issuer).rstrip("/") != self.issuer.rstrip("/"):
            return None
        subject, client = data.get("sub"), data.get("client_id")
        if not isinstance(subject, str | None) or not isinstance(client, str | None) or not (subject or client):
            return None
        exp = data.get("exp")
        scope = data.get("scope")
        return AccessToken(
            token="[oauth]",  # never kept: no repr or log line can show it
            client_id=client or subject or "", subject=subject,
            scopes=scope.split() if isinstance(scope, str) else [],
            expires_at=int(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None,
            resource=self._audience(data.get("aud")),
            claims={"iss": str(issuer)} if issuer is not None else None,
        )

    def _audience(self, aud: Any) -> str | None:
        """The token's audience as one resource: this server's URL when a list of audiences names it."""
        if isinstance(aud, str):
            return aud
        if isinstance(aud, list):
            mine = (self.resource_url or "").rstrip("/")
            named = [a for a in aud if isinstance(a, str)]
            return next((a for a in named if a.rstrip("/") == mine), named[0] if named else None)
        return None

    def __repr__(self) -> str:
        return f"IntrospectionVerifier({self.endpoint!r})"


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
        `resource_url`, checked by `verifier` (e.g. `IntrospectionVerifier`, or any SDK `TokenVerifier`); the SDK serves
        `/.well-known/oauth-protected-resource` and answers 401 with its URL."""
        settings = AuthSettings(
            issuer_url=issuer_url,  # type: ignore[arg-type]  # pydantic parses the URL
            resource_server_url=resource_url,  # type: ignore[arg-type]
            required_scopes=list(required_scopes) or None,
            validate_token_resource=True,
        )
        return cls(verifier, settings)

    @classmethod
    def from_oauth_file(cls, path: str | Path, environ: Mapping[str, str] | None = None) -> HttpAuth:
        """OAuth resource-server mode from a TOML file (`toolproof serve/gateway --oauth FILE`):

            issuer = "https://auth.example.com"            # the authorization server
            resource = "https://mcp.example.com/mcp"       # this server's URL, as clients reach it
            introspection_endpoint = "https://auth.example.com/introspect"
            scopes = ["tools"]                             # required of every token (optional)
            client_id = "toolproof-rs"                     # how this server authenticates to the endpoint
            client_secret_env = "TOOLPROOF_OAUTH_SECRET"   # the NAME of the variable holding the secret

        Errors are `ValueError`s naming the file and the key, never a secret."""
        import tomllib

        where = f"OAuth file {str(path)!r}"
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"cannot read the {where}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"the {where} is not TOML: {exc}") from None
        known = {"issuer", "resource", "introspection_endpoint", "scopes", "client_id", "client_secret_env",
                 "timeout_s"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{where}: unknown keys {unknown}; known: {sorted(known)}")
        for key in ("issuer", "resource", "introspection_endpoint"):
            if not isinstance(data.get(key), str) or not data[key]:
                raise ValueError(f"{where}: `{key}` (a URL) is required")
        scopes = data.get("scopes", [])
        if not isinstance(scopes, list) or not all(isinstance(x, str) and x for x in scopes):
            raise ValueError(f"{where}: `scopes` must be a list of scope names")
        secret = None
        if "client_secret_env" in data:
            name = str(data["client_secret_env"])
            secret = (os.environ if environ is None else environ).get(name)
            if not secret:
                raise ValueError(f"{where}: the environment variable {name} (client_secret_env) is not set or empty")
        client = data.get("client_id")
        if (client is None) != (secret is None):
            raise ValueError(f"{where}: give both `client_id` and `client_secret_env`, or neither")
        try:
            verifier = IntrospectionVerifier(
                data["introspection_endpoint"], issuer=data["issuer"], resource_url=data["resource"],
                client_id=None if client is None else str(client), client_secret=secret,
                timeout_s=float(data.get("timeout_s", 5.0)))
            return cls.oauth(verifier, issuer_url=data["issuer"], resource_url=data["resource"],
                             required_scopes=scopes)
        except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            raise ValueError(f"{where}: {exc}") from None

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


def host_names(host: str, extra_hosts: Iterable[str] = ()) -> frozenset[str]:
    """The names a Host or Origin header may carry (lowercase, any port): loopback, the bound address unless it
    is a wildcard, and `extra_hosts` (the names clients use; a port given with one is ignored)."""
    bound = f"[{host}]" if ":" in host and not host.startswith("[") else host
    names = set(LOOPBACK_NAMES)
    if not is_loopback(host) and host not in ("0.0.0.0", "::", "[::]"):
        names.add(bound.lower())
    for extra in extra_hosts:
        parsed = _HOST_HEADER.fullmatch(extra.strip())
        names.add(parsed.group(1).lower() if parsed else extra.strip().lower())
    return frozenset(names)


def host_allowed(header: str | None, names: frozenset[str]) -> bool:
    """A Host header that is exactly `name[:port]` with an allowed name. Parsed, not prefix-matched:
    `127.0.0.1:1@evil.example` or `127.0.0.1:x` is refused, `LOCALHOST:8000` accepted."""
    parsed = _HOST_HEADER.fullmatch(header or "")
    return parsed is not None and parsed.group(1).lower() in names


def origin_allowed(origin: str | None, names: frozenset[str]) -> bool:
    """No Origin (not a browser, or same-origin), or `http(s)://name[:port]` with an allowed name."""
    if origin is None:
        return True
    scheme, sep, rest = origin.partition("://")
    return bool(sep) and scheme.lower() in ("http", "https") and host_allowed(rest, names)


class HostCheck:
    """DNS-rebinding protection on every bind (ASGI middleware, outermost): `421` for a Host header that is not
    an allowed name, `403` for a browser Origin that is not one. It replaces the SDK's own check, which
    compares by prefix (`127.0.0.1:` followed by anything passed) and by case. Only the MCP endpoint `path`
    is checked, as the SDK did: `/healthz` and `/metrics` beside it answer probes by any address."""

    def __init__(self, app: ASGIApp, *, names: frozenset[str], path: str) -> None:
        self.app = app
        self.names = names
        self.path = path.rstrip("/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        where = str(scope.get("path", "")).rstrip("/")
        if scope["type"] == "http" and where == self.path:
            headers = Headers(scope=scope)
            refusal = None
            if not host_allowed(headers.get("host"), self.names):
                refusal = PlainTextResponse("Invalid Host header", status_code=421)
            elif not origin_allowed(headers.get("origin"), self.names):
                refusal = PlainTextResponse("Invalid Origin header", status_code=403)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def transport_security(host: str, extra_hosts: Iterable[str] = ()) -> TransportSecuritySettings:
    """The SDK's transport settings: its Host/Origin check off, because `HostCheck` (installed by `serve_http`
    in front of the app) does it by parsing the header; the SDK still checks the POST content type."""
    del host, extra_hosts  # the names go to HostCheck (host_names)
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)
