"""getattr with a default hides a renamed field: the default is used silently instead of failing.

Our own objects are typed, so callers read their attributes directly (a renamed field then fails in
mypy and in the tests, not silently in production). The only `getattr(obj, name, default)` calls left
in src/rocketq read objects whose attributes we do not control; each is listed here with the reason.
A new one fails this test: read the attribute of a typed object instead, or, for a foreign object,
add it here with its reason.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "rocketq"

_ARGPARSE = (
    "argparse.Namespace: the option is declared with default=SUPPRESS on the parent parser of every verb"
)
_INTROSPECTION = "introspection of arbitrary objects and modules while generating the blocking facade"
_OPTIONAL_HOOK = (
    "a registered processor is any object with process_request; reject_request is an optional hook"
    " (Java NettyRequestProcessor#rejectRequest)"
)
_OPTIONAL_RPC_HOOK = (
    "an RPC hook is any object with do_before_request / do_after_response (Java's RPCHook);"
    " do_before_requests (a run verified in one call) and after_response = False (nothing to do after"
    " an answer) are optional"
)

# (module path under src/rocketq, the call as ast.unparse writes it) -> why the object is foreign.
ALLOWED: dict[tuple[str, str], str] = {
    ("remoting/transport/hooks.py", "getattr(hook, 'after_response', True)"): _OPTIONAL_RPC_HOOK,
    ("remoting/transport/hooks.py", "getattr(hook, 'do_before_requests', None)"): _OPTIONAL_RPC_HOOK,
    ("client/admin_cli/__init__.py", "getattr(args, 'json', False)"): _ARGPARSE,
    ("client/admin_cli/__init__.py", "getattr(args, 'namesrv_addr', None)"): _ARGPARSE,
    ("client/admin_cli/core.py", "getattr(args, 'access_key', None)"): _ARGPARSE,
    ("client/admin_cli/core.py", "getattr(args, 'secret_key', None)"): _ARGPARSE,
    ("client/admin_cli/core.py", "getattr(args, 'tls_ca_file', None)"): _ARGPARSE,
    ("client/admin_cli/core.py", "getattr(args, 'use_tls', False)"): _ARGPARSE,
    ("client/blocking_gen.py", "getattr(obj, '__module__', None)"): _INTROSPECTION,
    ("client/blocking_gen.py", "getattr(sys.modules.get(home), head, None)"): _INTROSPECTION,
    ("common/fastjson.py", "getattr(obj, 'to_json', None)"): "any value handed to the JSON encoder",
    (
        "common/record/lazy.py",
        "getattr(compiled, compiled_decode, decode)",
    ): "a compiled extension that may lack a function",
    (
        "remoting/protocol/header_json.py",
        "getattr(json.encoder, 'c_make_encoder', None)",
    ): "the stdlib's C encoder is optional",
    ("remoting/transport/dispatch.py", "getattr(processor, 'reject_request', None)"): _OPTIONAL_HOOK,
    ("remoting/transport/dispatch.py", "getattr(processor, 'batch_codes', ())"): (
        "a registered processor is any object with process_request; batch_codes (with process_requests)"
        " is optional: the codes whose requests of one read it takes together"
    ),
}


def _getattr_with_default() -> Counter[tuple[str, str]]:
    found: Counter[tuple[str, str]] = Counter()
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) == 3
            ):
                found[(path.relative_to(SRC).as_posix(), ast.unparse(node))] += 1
    return found


def test_no_getattr_with_a_default_on_our_own_objects() -> None:
    found = _getattr_with_default()
    new = [key for key in sorted(found) if key not in ALLOWED]
    listed = "\n".join(f"src/rocketq/{path}: {call}" for path, call in new)
    assert not new, "read the attribute of a typed object instead of getattr with a default:\n" + listed


def test_the_count_does_not_grow() -> None:
    # Each exception once at most: the count can only go down (14 foreign uses when the list was written, 13 since the extensions load through one function).
    assert sum(_getattr_with_default().values()) <= len(ALLOWED)
