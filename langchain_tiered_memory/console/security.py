"""The console's guards: who may connect, which hosts are served, which POSTs are honoured.

- **Bind**: loopback by default; any other address needs an access token
  (:func:`check_bind`), because memories are personal data.
- **Token**: with one, every request must carry it, as ``Authorization: Bearer <token>``
  or the session cookie set by opening ``/?token=<token>`` once (HttpOnly,
  SameSite=Strict): a random session id of this process, never the token itself, since
  cookies ignore ports and every server on the host name receives them.
- **Host**: on loopback only ``localhost`` and loopback address literals are served, so a
  page on another site cannot reach the console by rebinding its own name to 127.0.0.1.
- **Notices**: the status line after an action is signed by this process; a link cannot
  show a forged receipt.
- **CSRF**: a mutation is a POST carrying this process's form token, and its ``Origin``
  (when the browser sends one) must be the console's own; ``--read-only`` refuses them all.
- **Content**: every page sends a Content-Security-Policy that runs no script at all, so even
  a rendering bug cannot execute a memory's text; the templates escape every value anyway.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from langchain_tiered_memory.errors import UnsafeBindError

__all__ = ["COOKIE", "ConsoleGuard", "check_bind", "is_loopback", "secure_headers"]

COOKIE = "tm_console_token"
MIN_TOKEN_LENGTH = 16
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve on a non-loopback address without a long enough token.

    Raises:
        UnsafeBindError: ``host`` is reachable from other machines and ``token`` is missing
            or shorter than 16 characters.

    Example:
        >>> check_bind("127.0.0.1", None)  # fine
        >>> check_bind("0.0.0.0", None)
        Traceback (most recent call last):
        ...
        langchain_tiered_memory.errors.UnsafeBindError: ...
    """
    if is_loopback(host):
        return
    if not token or len(token) < MIN_TOKEN_LENGTH:
        raise UnsafeBindError(
            f"the console would listen on {host}, reachable from other machines, and it shows "
            f"personal data: pass --token with at least {MIN_TOKEN_LENGTH} characters (e.g. "
            f"TIERED_MEMORY_CONSOLE_TOKEN=$(python -c 'import secrets; "
            "print(secrets.token_urlsafe())')), or bind 127.0.0.1."
        )


def _loopback_literal(hostname: str) -> bool:
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


@dataclass
class ConsoleGuard:
    """The checks every request passes before a page handler runs."""

    host: str = "127.0.0.1"
    token: str | None = None
    read_only: bool = False
    csrf_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    # Browser sessions: what the cookie carries instead of the token. Cookies ignore
    # ports, so every other server on this host name receives the cookie: it must be
    # worth nothing beyond this process (the token also opens the Bearer door).
    sessions: set[str] = field(default_factory=set)
    _notice_key: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def _host_allowed(self, request: Request) -> bool:
        if not is_loopback(self.host):
            return True  # a token guards it; any name may point at the machine
        name = request.headers.get("host", "")
        hostname = urlsplit(f"//{name}").hostname or ""
        # "localhost" or a loopback address literal (127.0.0.2 too): DNS rebinding needs
        # a name, and no other name is served
        return hostname == "localhost" or _loopback_literal(hostname)

    def _authenticated(self, request: Request) -> bool:
        if self.token is None:
            return True
        header = request.headers.get("authorization", "")
        if header.startswith("Bearer ") and _same(header[7:], self.token):
            return True
        session = request.cookies.get(COOKIE, "")
        return any(_same(session, known) for known in self.sessions)

    def sign_notice(self, notice: str) -> dict[str, str]:
        """The query parameters that carry a notice this console wrote."""
        return {"notice": notice, "sig": self._mac(notice)}

    def signed_notice(self, params: Mapping[str, str]) -> str:
        """The notice in ``params`` if this console signed it, else ``""``."""
        notice, sig = params.get("notice", ""), params.get("sig", "")
        return notice if notice and _same(sig, self._mac(notice)) else ""

    def _mac(self, text: str) -> str:
        return hmac.new(self._notice_key, text.encode("utf-8", "replace"), "sha256").hexdigest()

    def _origin_ok(self, request: Request) -> bool:
        origin = request.headers.get("origin")
        if origin is None:  # not a browser's cross-site request: those always carry one
            return True
        return urlsplit(origin).netloc == request.headers.get("host", "")

    async def check(self, request: Request) -> Response | None:
        """The refusal to send instead of the page, or ``None`` to go on."""
        if not self._host_allowed(request):
            return PlainTextResponse("unknown host: open the console at 127.0.0.1", 400)
        query_token = request.query_params.get("token")
        if self.token is not None and query_token is not None:
            if not _same(query_token, self.token):
                return PlainTextResponse("wrong token", 401)
            # trade the token in the address for a cookie, and drop it from the address
            response = RedirectResponse(str(request.url.remove_query_params("token")), 303)
            session = secrets.token_urlsafe(32)
            self.sessions.add(session)
            response.set_cookie(COOKIE, session, httponly=True, samesite="strict")
            return response
        if not self._authenticated(request):
            return PlainTextResponse(
                "this console needs its token: open /?token=<token> once, or send "
                "'Authorization: Bearer <token>'",
                401,
            )
        if request.method == "POST":
            if self.read_only:
                return PlainTextResponse("the console is read-only (--read-only)", 403)
            form = await request.form()
            sent = form.get("csrf")
            if not isinstance(sent, str) or not _same(sent, self.csrf_token):
                return PlainTextResponse(
                    "refused: the form's CSRF token is missing or stale; reload the page", 403
                )
            if not self._origin_ok(request):
                return PlainTextResponse("refused: the request came from another site", 403)
        elif request.method not in ("GET", "HEAD"):
            return PlainTextResponse("method not allowed", 405)
        return None


def secure_headers(response: Response) -> Response:
    """Headers every console response carries."""
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    # same-origin, not no-referrer: with no-referrer the browser sends "Origin: null" on the
    # console's own form posts, and the origin check must refuse those
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers.setdefault("Cache-Control", "no-store")
    return response
