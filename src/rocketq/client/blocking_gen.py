"""Writes rocketq/client/_blocking_classes.py: the blocking twins of the async client classes.

As redis-py and httpcore generate their sync twins from the async code: each public method of
Producer, TransactionProducer, PushConsumer, LitePullConsumer, SimpleConsumer and Admin gets a twin
with the same name, signature, annotations and docstring; a coroutine method's twin runs it on the
background loop and returns its result, a plain method's twin runs on the loop too (the async objects
are not thread-safe). Type checkers see real signatures, and a misspelt method is an error.

    python -m rocketq.client.blocking_gen            # rewrite the module
    python -m rocketq.client.blocking_gen --check    # exit 1 when it is out of step (a unit test runs this)
"""

from __future__ import annotations

import argparse
import enum
import inspect
import keyword
import re
import sys
from pathlib import Path
from typing import Any

from rocketq.client import (
    Admin,
    LitePullConsumer,
    Producer,
    PushConsumer,
    SimpleConsumer,
    TransactionProducer,
)

TARGET = Path(__file__).with_name("_blocking_classes.py")
# Twins in this order (a subclass after its base); the base of each twin.
CLASSES: tuple[tuple[type[Any], str], ...] = (
    (Producer, "_BlockingProducer"),
    (TransactionProducer, "Producer"),
    (PushConsumer, "_Blocking"),
    (LitePullConsumer, "_Blocking"),
    (SimpleConsumer, "_Blocking"),
    (Admin, "_Blocking"),
)
# Written by hand in blocking.py (context managers, futures) or not meant for a blocking caller.
SKIP = {"start", "shutdown", "close", "send_async", "request_async"}
# The hooks the client instance and the rebalance call (ProducerInner / ConsumerInner, RebalanceImpl's
# host): public for them, not for users.
INTERNAL = {
    "publish_topics",
    "update_publish_info",
    "check_transaction_state",
    "consumer_data",
    "subscription_topics",
    "update_subscribe_info",
    "do_rebalance",
    "persist_consumer_offset",
    "reset_offset",
    "running_info",
    "offset_table",
    "consume_message_directly",
    "compute_pull_from_where",
    "dispatch_pull",
    "message_queue_changed",
    "remove_dirty_offset",
    "remove_unnecessary_queue",
    "lock_queue",
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_BUILTINS = {
    "None",
    "int",
    "str",
    "bytes",
    "bool",
    "float",
    "dict",
    "list",
    "set",
    "tuple",
    "type",
    "object",
    "frozenset",
}


def _public_methods(cls: type[Any]) -> list[tuple[str, Any]]:
    out = []
    for name in sorted(vars(cls)):
        if name.startswith("_") or name in SKIP or (name in INTERNAL and cls is not Admin):
            continue
        attr = inspect.getattr_static(cls, name)
        if isinstance(attr, staticmethod | classmethod | property) or not inspect.isfunction(attr):
            continue
        out.append((name, attr))
    return out


def _origin(name: str, owners: list[type[Any]]) -> str | None:
    """`from X import name` for an annotation name, found where the async classes are defined."""
    head = name.split(".")[0]
    if head in _BUILTINS or keyword.iskeyword(head):
        return None
    for owner in owners:
        module = sys.modules[owner.__module__]
        obj = module.__dict__.get(head)
        if obj is None:
            continue
        if inspect.ismodule(obj):
            return f"import {obj.__name__}"
        home = getattr(obj, "__module__", None)
        if isinstance(home, str) and getattr(sys.modules.get(home), head, None) is obj and home != "builtins":
            return f"from {home} import {head}"
        return f"from {_defining_module(head, obj, owner.__module__)} import {head}"
    for module_name, module in sorted(sys.modules.items()):  # a name imported only for type checking
        if module_name.startswith("rocketq.") and isinstance(module.__dict__.get(head), type):
            obj = module.__dict__[head]
            return f"from {obj.__module__} import {head}"
    raise LookupError(f"cannot find where annotation name {head!r} comes from")


def _defining_module(name: str, obj: Any, fallback: str) -> str:
    """The module that assigns `name` (a type alias has no __module__ of its own), so that strict
    type checkers see an explicit export."""
    assignment = re.compile(rf"^{re.escape(name)}\b[^=\n]*=", re.MULTILINE)
    for module_name, module in sorted(sys.modules.items()):
        if module_name.startswith("rocketq.") and module.__dict__.get(name) is obj:
            try:
                if assignment.search(inspect.getsource(module)):
                    return module_name
            except (OSError, TypeError):
                continue
    return fallback


def _signature(fn: Any) -> tuple[str, str, list[str]]:
    """(parameters text, call arguments text, annotation texts) of a method, `self` first."""
    sig = inspect.signature(fn)
    params, args, notes = [], [], []
    star_done = False
    for p in sig.parameters.values():
        text = p.name
        if p.annotation is not inspect.Parameter.empty:
            text += f": {p.annotation}"
            notes.append(str(p.annotation))
        if p.default is not inspect.Parameter.empty:
            text += (
                f" = {p.default!r}"
                if p.annotation is inspect.Parameter.empty
                else f" = {_default(p.default)}"
            )
        if p.kind is p.KEYWORD_ONLY and not star_done:
            params.append("*")
            star_done = True
        if p.kind is p.VAR_POSITIONAL:
            text = "*" + text
            star_done = True
        if p.kind is p.VAR_KEYWORD:
            text = "**" + text
        params.append(text)
        if p.name == "self":
            continue
        if p.kind is p.VAR_POSITIONAL:
            args.append(f"*{p.name}")
        elif p.kind is p.VAR_KEYWORD:
            args.append(f"**{p.name}")
        elif p.kind is p.KEYWORD_ONLY:
            args.append(f"{p.name}={p.name}")
        else:
            args.append(p.name)
    ret = sig.return_annotation
    if ret is not inspect.Signature.empty:
        notes.append(str(ret))
    return ", ".join(params), ", ".join(args), notes


_DEFAULT_IMPORTS: set[str] = set()


def _default(value: Any) -> str:
    if isinstance(value, str | int | float | bool | type(None)):
        return repr(value)
    if isinstance(value, enum.Enum):
        _DEFAULT_IMPORTS.add(f"from {type(value).__module__} import {type(value).__name__}")
        return f"{type(value).__name__}.{value.name}"
    # a module-level constant, e.g. SYSTEM_CLOCK: from the shortest module path holding it (where it is defined)
    for module_name, module in sorted(sys.modules.items(), key=lambda kv: (len(kv[0]), kv[0])):
        if module_name.startswith("rocketq."):
            for name, obj in vars(module).items():
                if obj is value and name.isupper():
                    _DEFAULT_IMPORTS.add(f"from {module_name} import {name}")
                    return name
    raise LookupError(f"cannot spell the default value {value!r} in generated code")


def _docstring(doc: str) -> str:
    lines = doc.replace("\\", "\\\\").replace('"""', "'''").splitlines()
    indented = [lines[0], *[f"        {line}" if line.strip() else "" for line in lines[1:]]]
    return '        """' + "\n".join(indented) + '"""'


def _isort_key(name: str) -> tuple[int, str]:
    # isort's order within one import: CONSTANTS, then Classes, then functions
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def _import_block(imports: set[str]) -> list[str]:
    stdlib = sorted(
        (line for line in imports if not line.split()[1].startswith("rocketq")),
        key=lambda line: (line.startswith("from"), line),
    )
    ours: dict[str, set[str]] = {}
    for line in imports:
        if line.split()[1].startswith("rocketq"):
            module, _, names = line[len("from ") :].partition(" import ")
            for one in names.split(", "):
                ours.setdefault(module, set()).add(one)
    merged = [
        f"from {module} import {', '.join(sorted(names, key=_isort_key))}"
        for module, names in sorted(ours.items())
    ]
    return [*stdlib, "", *merged]


def render() -> str:
    imports: set[str] = set()
    owners = [cls for cls, _ in CLASSES]
    body: list[str] = []

    def need(texts: list[str]) -> None:
        for text in texts:
            for ident in _NAME.findall(text):
                if (line := _origin(ident, owners)) is not None:
                    imports.add(line)

    for cls, base in CLASSES:
        imports.add(f"from {cls.__module__} import {cls.__name__} as Async{cls.__name__}")
        doc = f"Blocking twin of {cls.__module__}.{cls.__name__}: the same methods, each waiting for its result."
        body += ["", "", f"class {cls.__name__}({base}):", f'    """{doc}"""', "",
                 f"    _async_cls: type[Any] = Async{cls.__name__}", f"    _target: Async{cls.__name__}"]  # fmt: skip
        init_params, init_args, notes = _signature(cls.__init__)
        need(notes)
        body += [
            "",
            f"    def __init__({init_params}) -> None:",
            f"        self._target = Async{cls.__name__}({init_args})",
        ]
        for name, fn in _public_methods(cls):
            params, args, notes = _signature(fn)
            ret = inspect.signature(fn).return_annotation
            ret_text = "Any" if ret is inspect.Signature.empty else str(ret)
            if ret_text.startswith("AsyncIterator"):
                continue
            need(notes)
            body += ["", f"    def {name}({params}) -> {ret_text}:"]
            if method_doc := inspect.getdoc(fn):
                body.append(_docstring(method_doc))
            if inspect.iscoroutinefunction(fn):
                body.append(f"        return run(self._target.{name}({args}))")
            else:
                body.append(
                    f"        return in_loop(self._target.{name}, {args})"
                    if args
                    else f"        return in_loop(self._target.{name})"
                )
    imports |= _DEFAULT_IMPORTS
    imports.add("from rocketq.client._blocking_base import _Blocking, _BlockingProducer, in_loop, run")
    imports.add("from typing import Any")
    head = [
        '"""Generated by `python -m rocketq.client.blocking_gen` from the async classes: do not edit by hand."""',
        "",
        "from __future__ import annotations",
        "",
        *_import_block(imports),
    ]
    return "\n".join(head + body) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rocketq.client.blocking_gen", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the generated module is out of step"
    )
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(
                f"{TARGET} is out of step with the async classes: run python -m rocketq.client.blocking_gen",
                file=sys.stderr,
            )
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
