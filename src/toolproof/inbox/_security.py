"""What keeps the inbox private: the Host header checked, a token when not on loopback, CSRF on every POST.

The server binds 127.0.0.1 unless told otherwise; another address needs a token (`toolproof ui` refuses to
start without one). A browser presents the token once as `?token=...` and keeps it in an HttpOnly cookie;
scripts may send `Authorization: Bearer ...`. Every POST carries the double-submit CSRF token (a form field
equal to a SameSite=Strict cookie) and, when the browser sends one, an Origin of this very host.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import Final
from urllib.parse import urlsplit

from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp

TOKEN_COOKIE: Final = "toolproof_token"
CSRF_COOKIE: Final = "toolproof_csrf"
OPERATOR_COOKIE: Final = "toolproof_operator"
FLASH_COOKIE: Final = "toolproof_flash"


class RefusedToStart(ValueError):
    """The inbox would be reachable beyond this machine without a token."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str | None) -> None:
    """Refuse an address beyond loopback unless a token of reasonable length guards it."""
    if is_loopback(host):
        return
    if not token or len(token) < 16:
        raise RefusedToStart(f"the inbox would listen on {host}, beyond this machine: give --token (16 characters "
                             "or more) or bind 127.0.0.1")


def hosts_for(host: str, extra: Sequence[str] = ()) -> frozenset[str]:
    """The Host header names the inbox answers to."""
    names = {"127.0.0.1", "localhost", "[::1]", *extra}
    if host not in ("0.0.0.0", "::"):
        names.add(host)
    return frozenset(names)


class Guard(BaseHTTPMiddleware):
    """Host check, token check, and the CSRF cookie every page's forms are built from."""

    def __init__(self, app: ASGIApp, *, allowed_hosts: frozenset[str], token: str | None) -> None:
        super().__init__(app)
        self.allowed_hosts = allowed_hosts
        self.token = token

    async def dispatch(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        host = urlsplit(f"//{request.headers.get('host', '')}").hostname or ""
        if host not in self.allowed_hosts and f"[{host}]" not in self.allowed_hosts:
            return PlainTextResponse("Invalid Host header", status_code=400)
        if self.token is not None:
            given = request.query_params.get("token")
            if given is not None and same_secret(given, self.token):
                back = RedirectResponse(request.url.path, status_code=303)
                back.set_cookie(TOKEN_COOKIE, given, httponly=True, samesite="strict")
                return back
            if not self._authorized(request):
                return PlainTextResponse("This inbox needs its token: open it once as /?token=...", status_code=401)
        csrf = request.cookies.get(CSRF_COOKIE)
        request.state.csrf = csrf or secrets.token_urlsafe(24)
        response = await call_next(request)
        if not csrf:
            response.set_cookie(CSRF_COOKIE, request.state.csrf, httponly=True, samesite="strict")
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "same-origin"
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:;"
            " form-action 'self'; frame-ancestors 'none'")
        return response

    def _authorized(self, request: Request) -> bool:
        assert self.token is not None
        auth = request.headers.get("authorization", "")
        given = auth[7:] if auth.lower().startswith("bearer ") else request.cookies.get(TOKEN_COOKIE, "")
        return same_secret(given, self.token)


def same_secret(given: str, expected: str) -> bool:
    """Constant-time equality on the UTF-8 bytes: `hmac.compare_digest` refuses non-ASCII `str` with a
    TypeError, which a request carrying `?token=é` would otherwise turn into a 500."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))


class Signer:
    """Cookies only this server can have written: a value and its HMAC under a key made when the inbox starts.

    Cookies do not keep ports apart: a page served on another port of this machine can set a cookie for
    127.0.0.1, so a plain `operator=mallory` cookie would decide who approved. A signed one cannot be forged
    there (the key never leaves this process) nor read (HttpOnly); a restart signs every operator out."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def sign(self, purpose: str, value: str) -> str:
        """`value` (text, kept readable) with its signature for one purpose (a name is not a flash)."""
        raw = value.encode()
        mac = hmac.new(self._key, purpose.encode() + b"\0" + raw, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(raw).decode() + "." + base64.urlsafe_b64encode(mac).decode()

    def unsign(self, purpose: str, token: str | None) -> str | None:
        """The value this server signed for `purpose`, or None for anything else (absent, forged, altered)."""
        if not token or "." not in token:
            return None
        data, _, _mac = token.partition(".")
        try:
            raw = base64.urlsafe_b64decode(data.encode())
            return raw.decode() if hmac.compare_digest(self.sign(purpose, raw.decode()), token) else None
        except (ValueError, UnicodeError):
            return None


def csrf_ok(request: Request, submitted: str | None) -> bool:
    """The form's CSRF token matches the cookie, and the Origin (when sent) is this host."""
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie or not submitted or not same_secret(cookie, submitted):
        return False
    origin = request.headers.get("origin")
    return origin is None or urlsplit(origin).netloc == request.headers.get("host")
