"""The dashboard's login: a form, and a session cookie signed with HMAC-SHA256 (stdlib `hmac`).

apache/rocketmq-dashboard keeps its accounts in a users.properties file (`name=password`) and asks for
them on a login page when `rocketmq.config.loginRequired` is on; so does this one (`--users-file`). The
cookie holds the user name and an expiry, signed with a key made at start-up: restarting the dashboard
ends every session. Without a users file there is no login (the dashboard listens on loopback unless
told otherwise); `rocketq dashboard` refuses to sign requests with ACL credentials without one.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote

from jproperties import Properties
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

COOKIE = "rocketq_dashboard_session"
SESSION_S = 12 * 3600
OPEN_PATHS = ("/login", "/static/")  # reachable without a session


def read_users(path: str | Path) -> dict[str, str]:
    """`name=password` lines (java.util.Properties syntax, as rocketmq-dashboard's users.properties)."""
    props = Properties()
    with open(path, "rb") as f:
        props.load(f, "utf-8")
    users = {str(name): str(value.data) for name, value in props.items() if str(name)}
    if not users:
        raise ValueError(f"{path} holds no account (expected name=password lines)")
    return users


class Sessions:
    """Session cookies: `name|expiry|signature`, the signature over the first two parts."""

    def __init__(
        self, users: Mapping[str, str], key: bytes | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.users = dict(users)
        self._key = key or secrets.token_bytes(32)
        self._clock = clock

    def check_password(self, name: str, password: str) -> bool:
        known = self.users.get(name)
        # compare_digest in both cases: an unknown name takes as long as a wrong password
        return hmac.compare_digest((known or "\0").encode(), password.encode()) and known is not None

    def _sign(self, text: str) -> str:
        return hmac.new(self._key, text.encode(), hashlib.sha256).hexdigest()

    def issue(self, name: str) -> str:
        text = f"{quote(name, safe='')}|{int(self._clock()) + SESSION_S}"
        return f"{text}|{self._sign(text)}"

    def user_of(self, cookie: str | None) -> str | None:
        """The user a cookie was issued to, None when it is missing, forged, expired or for a removed user."""
        if not cookie or cookie.count("|") != 2:
            return None
        name, expiry, signature = cookie.split("|")
        if not hmac.compare_digest(self._sign(f"{name}|{expiry}"), signature):
            return None
        if not expiry.isdigit() or int(expiry) < self._clock():
            return None
        user = unquote(name)
        return user if user in self.users else None


class LoginRequired:
    """ASGI middleware: a request without a valid session goes to /login (static files excepted)."""

    def __init__(self, app: ASGIApp, sessions: Sessions) -> None:
        self.app = app
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(OPEN_PATHS):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if self.sessions.user_of(request.cookies.get(COOKIE)) is None:
            target = scope["path"] + (
                f"?{scope['query_string'].decode()}" if scope.get("query_string") else ""
            )
            await RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)


def login_routes(
    sessions: Sessions, render: Callable[..., Response]
) -> tuple[
    Callable[[Request], Awaitable[Response]],
    Callable[[Request], Awaitable[Response]],
    Callable[[Request], Awaitable[Response]],
]:
    """GET /login (the form), POST /login (check, set the cookie, go on), GET /logout."""

    def _next(value: str | None) -> str:
        return value if value and value.startswith("/") and not value.startswith("//") else "/"

    async def form(request: Request) -> Response:
        return render(request, "login.html", next=_next(request.query_params.get("next")))

    async def submit(request: Request) -> Response:
        # parsed as the other forms are (no multipart parser needed for a urlencoded form)
        data = {k: v[0] for k, v in parse_qs((await request.body()).decode("utf-8", "replace")).items()}
        name, password = data.get("username", ""), data.get("password", "")
        target = _next(data.get("next"))
        if not sessions.check_password(name, password):
            return render(request, "login.html", status=401, next=target, error="wrong user name or password")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(COOKIE, sessions.issue(name), max_age=SESSION_S, httponly=True, samesite="strict")
        return response

    async def logout(request: Request) -> Response:
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE)
        return response

    return form, submit, logout
