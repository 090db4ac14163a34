"""The dashboard's sessions and users file (no server: the cookie and the file are plain data)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("starlette")

from rocketq.dashboard.login import SESSION_S, Sessions, read_users


def test_a_session_cookie_names_its_user_until_it_expires() -> None:
    now = [1_000_000.0]
    sessions = Sessions({"admin": "pw", "ops team": "x"}, key=b"k" * 32, clock=lambda: now[0])
    cookie = sessions.issue("ops team")
    assert sessions.user_of(cookie) == "ops team"
    now[0] += SESSION_S + 1
    assert sessions.user_of(cookie) is None  # expired


def test_forged_or_foreign_cookies_name_nobody() -> None:
    sessions = Sessions({"admin": "pw"}, key=b"k" * 32)
    cookie = sessions.issue("admin")
    name, expiry, signature = cookie.split("|")
    assert sessions.user_of(f"root|{expiry}|{signature}") is None
    assert sessions.user_of(f"{name}|{int(expiry) + 99}|{signature}") is None
    assert sessions.user_of(Sessions({"admin": "pw"}).issue("admin")) is None  # another key: another process
    assert sessions.user_of(None) is None and sessions.user_of("garbage") is None
    assert Sessions({}, key=b"k" * 32).user_of(cookie) is None  # a user removed from the file


def test_passwords_are_checked_exactly() -> None:
    sessions = Sessions({"admin": "pw"})
    assert sessions.check_password("admin", "pw")
    assert not sessions.check_password("admin", "pw ") and not sessions.check_password("nobody", "pw")


def test_users_file_in_java_properties_syntax(tmp_path: Path) -> None:
    f = tmp_path / "users.properties"
    f.write_text("# comment\nadmin=s3cret\nops : other\\u00e9\n")
    assert read_users(f) == {"admin": "s3cret", "ops": "other\u00e9"}
    (tmp_path / "empty").write_text("# nobody\n")
    with pytest.raises(ValueError, match="holds no account"):
        read_users(tmp_path / "empty")
