"""rocketq.client and rocketq.remoting.transport import their public names on first use (PEP 562).

Each public name must resolve on its own in a fresh interpreter (a name imported first is where an
import cycle would show), and a process that only pulls (the Spark reader's: rocketq.spark.client) must
not import pydantic, the validated configurations or the headers of requests it never sends.
"""

import subprocess
import sys

import pytest

import rocketq.client
import rocketq.remoting.transport

NAMES = [("rocketq.client", n) for n in rocketq.client.__all__] + [
    ("rocketq.remoting.transport", n) for n in rocketq.remoting.transport.__all__
]


def run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_public_name_resolves_first_in_a_fresh_process() -> None:
    # One interpreter per name, each importing that name before anything else of rocketq (run together).
    procs = [
        (
            name,
            subprocess.Popen([sys.executable, "-c", f"from {module} import {name}"], stderr=subprocess.PIPE),
        )
        for module, name in NAMES
    ]
    failed = {name: p.communicate(timeout=120)[1].decode()[-500:] for name, p in procs}
    assert {name: err for name, err in failed.items() if err} == {}
    assert all(p.returncode == 0 for _name, p in procs)


@pytest.mark.parametrize("module", ["rocketq.client", "rocketq.remoting.transport"])
def test_unknown_name_is_an_attribute_error(module: str) -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = sys.modules[module].Nope


def test_reader_path_imports_no_pydantic_nor_cold_headers() -> None:
    out = run(
        "import sys, rocketq.spark.client\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('pydantic', 'rocketq.common.config',"
        " 'rocketq.remoting.transport.config', 'rocketq.remoting.transport.server',"
        " 'rocketq.remoting.protocol.headers.transaction', 'rocketq.remoting.protocol.bodies.admin')))))"
    )
    assert out.split() == []
