"""getattr with a default hides a renamed field: the default is used silently instead of failing.

Collaborators should be typed so that callers read their attributes directly. This test lists every
`getattr(obj, name, default)` in src/rocketq today and fails on any new one (file and expression), so
the count can only go down; remove an entry here when the call it names goes away. The list holds a
few that read modules or dunders (the compiled accelerator's API_VERSION, json.encoder,
`__slots__`), which are legitimate.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "rocketq"

# (module path under src/rocketq, the call as ast.unparse writes it)
KNOWN: list[tuple[str, str]] = [
    ("broker/clients.py", "getattr(conn, 'is_active', True)"),
    ("broker/clients.py", "getattr(self.conn, 'remote_addr', '?')"),
    ("broker/context.py", "getattr(self.store_config, 'max_message_size_bytes', 4 * 1024 * 1024)"),
    ("broker/controller.py", "getattr(self.store_config, 'ha_listen_port', cfg.listen_port + 1)"),
    ("broker/controller.py", "getattr(store_config, 'broker_role', None)"),
    ("broker/controller.py", "getattr(store_config, 'ha_master_address', None)"),
    ("broker/controller.py", "getattr(store_config, 'message_delay_level', DEFAULT_DELAY_LEVELS)"),
    ("broker/filter/sql92/__init__.py", "getattr(item, '__slots__', ())"),
    ("broker/filter/sql92/__init__.py", 'getattr(item, slot, None)'),
    ("broker/housekeeping.py", "getattr(conn, 'is_active', True)"),
    ("broker/message_lifecycle.py", "getattr(role, 'name', str(role))"),
    ("broker/message_lifecycle.py", "getattr(store_config, 'broker_role', None)"),
    ("broker/metrics.py", "getattr(language, 'name', language)"),
    ("broker/metrics.py", "getattr(self.ctx.store_config, 'store_path_root_dir', '.')"),
    ("broker/processors/admin/consumer.py", "getattr(ch.conn, 'remote_addr', '')"),
    ("broker/processors/admin/reset_offset.py", "getattr(conn, 'remote_addr', '?')"),
    ("broker/processors/admin/runtime.py", "getattr(ctx.store_config, 'store_path_root_dir', None)"),
    ("broker/processors/admin/stats.py", "getattr(ctx.store, 'queues', None)"),
    ("broker/processors/admin/stats.py", "getattr(getattr(ctx.store, 'queues', None), 'queues_of', None)"),
    ("broker/processors/consumer_manage.py", "getattr(ctx.store_config, 'access_message_in_memory_max_ratio_pct', 40)"),
    ("broker/processors/pull.py", "getattr(role, 'name', str(role))"),
    ("broker/processors/pull.py", "getattr(store_config, 'broker_role', None)"),
    ("broker/processors/query.py", "getattr(self.ctx.store_config, 'default_query_max_num', 32)"),
    ("broker/stats/publisher.py", "getattr(getattr(getattr(store, 'commit_log', None), 'queue', None), 'flushed_where', max_phy)"),
    ("broker/stats/publisher.py", "getattr(getattr(store, 'commit_log', None), 'queue', None)"),
    ("broker/stats/publisher.py", "getattr(self.ctx.store_config, 'store_path_root_dir', '.')"),
    ("broker/stats/publisher.py", "getattr(store, 'commit_log', None)"),
    ("broker/transaction/bridge.py", "getattr(self.ctx.store, 'look_message_by_offset', None)"),
    ("broker/transaction/check.py", "getattr(self.ctx.store_config, 'file_reserved_time_h', 72)"),
    ("broker/transaction/runtime.py", "getattr(role, 'name', str(role))"),
    ("broker/transaction/runtime.py", "getattr(store_config, 'broker_role', None)"),
    ("client/admin_cli/__init__.py", "getattr(args, 'json', False)"),
    ("client/admin_cli/__init__.py", "getattr(args, 'namesrv_addr', None)"),
    ("client/admin_cli/core.py", "getattr(args, 'access_key', None)"),
    ("client/admin_cli/core.py", "getattr(args, 'secret_key', None)"),
    ("client/admin_cli/core.py", "getattr(args, 'tls_ca_file', None)"),
    ("client/admin_cli/core.py", "getattr(args, 'use_tls', False)"),
    ("client/bench.py", "getattr(args, 'access_key', None)"),
    ("client/bench.py", "getattr(args, 'secret_key', None)"),
    ("client/bench.py", "getattr(args, 'tls_ca_file', None)"),
    ("client/bench.py", "getattr(args, 'use_tls', False)"),
    ("client/blocking_gen.py", "getattr(obj, '__module__', None)"),
    ("client/blocking_gen.py", 'getattr(sys.modules.get(home), head, None)'),
    ("client/consumer/consume_service.py", "getattr(self.host, 'client_id', '')"),
    ("client/errors.py", "getattr(last_error, 'retry', RetryClass.NEVER)"),
    ("client/metrics.py", "getattr(consumer, 'rebalance', None)"),
    ("client/producer/producer.py", "getattr(last_error, 'code', -1)"),
    ("client/remote_requests.py", "getattr(conn, 'remote_addr', '')"),
    ("client/remote_requests.py", "getattr(conn, 'remote_addr', '?')"),
    ("client/remote_requests.py", "getattr(conn, 'remote_addr', '?')"),
    ("common/config.py", "getattr(cls, 'JAVA_PROPERTY_NAMES', {})"),
    ("common/config.py", "getattr(default, 'value', default)"),
    ("common/fastjson.py", "getattr(obj, 'to_json', None)"),
    ("common/record/accel.py", "getattr(_crecord, 'API_VERSION', None)"),
    ("common/record/lazy.py", 'getattr(compiled, compiled_decode, decode)'),
    ("remoting/metrics.py", "getattr(inner, 'reject_request', None)"),
    ("remoting/protocol/header_json.py", "getattr(json.encoder, 'c_make_encoder', None)"),
    ("remoting/transport/dispatch.py", "getattr(processor, 'reject_request', None)"),
    ("remoting/transport/response_table.py", "getattr(rf.conn, 'remote_addr', '?')"),
]


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


def test_no_new_getattr_with_a_default() -> None:
    known = Counter(KNOWN)
    new = _getattr_with_default() - known
    listed = "\n".join(f"src/rocketq/{path}: {call}" for path, call in sorted(new.elements()))
    assert not new, "read the attribute of a typed object instead of getattr with a default:\n" + listed


def test_the_count_does_not_grow() -> None:
    # 59 when the list was written; it only shrinks.
    assert sum(_getattr_with_default().values()) <= len(KNOWN)
