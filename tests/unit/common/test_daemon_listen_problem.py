import errno

import pytest

from rocketq.common.daemon import listen_problem


def _bind_failure(cause: OSError | None) -> Exception:
    exc = RuntimeError("bind failed")
    exc.__cause__ = cause
    return exc


@pytest.mark.parametrize(
    ("cause", "expected"),
    [
        (OSError(errno.EADDRINUSE, "in use"), "cannot listen on 127.0.0.1:9876: the port is already in use"),
        (
            OSError(errno.EADDRNOTAVAIL, "no"),
            "cannot listen on 127.0.0.1:9876: the address is not available on this host",
        ),
        (OSError(errno.EACCES, "denied"), "cannot listen on 127.0.0.1:9876: bind failed"),
        (None, "cannot listen on 127.0.0.1:9876: bind failed"),
    ],
)
def test_listen_problem_names_the_address_and_the_cause(cause: OSError | None, expected: str) -> None:
    assert listen_problem(_bind_failure(cause), "127.0.0.1:9876") == expected
