"""SQL92 filter cost per message: evaluation on a properties dict, and on a stored record as a pull does.

    .venv/bin/python bench/filter.py            # best of 5 runs of 50000 calls each
    .venv/bin/python bench/filter.py --calls 200000

"matches" is CompiledExpression.matches on a decoded properties dict (the long-polling path);
"record" is Sql92MessageFilter.is_matched_by_commit_log on the stored record bytes (the store's read
loop: reads the named properties out of the record, then evaluates). Also shown: a full properties
decode of the same record and an uncached compile, for scale.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable

from rocketq.broker.filter import Sql92MessageFilter, compile_sql92, record_properties
from rocketq.broker.filter.sql92 import compile_expression
from rocketq.common.message import MessageExt
from rocketq.common.record.codec import encode_record

PROPERTIES = {
    "TAGS": "TagA",
    "KEYS": "order-1001",
    "UNIQ_KEY": "7F0000010B6A18B4AAC27A1B2C3D0000",
    "WAIT": "true",
    "price": "150",
    "region": "eu",
}
EXPRESSIONS = [
    "TAGS = 'TagA'",
    "price > 100",
    "price > 100.5",
    "region IN ('eu', 'us', 'cn')",
    "price BETWEEN 100 AND 200 AND region IN ('eu', 'us')",
    "a IS NULL OR (price > 100.5 AND TAGS <> 'TagB' AND NOT (region = 'cn'))",
    "price > 100 AND price < 99 OR region = 'eu'",
]


def best_ns(fn: Callable[[], object], calls: int) -> float:
    return min(timeit.repeat(fn, number=calls, repeat=5)) / calls * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50000)
    args = parser.parse_args()
    record = encode_record(MessageExt("TopicTest", b"x" * 256, properties=PROPERTIES))
    print(f"{'matches':>9} {'record':>9}  expression (ns per message)")
    for text in EXPRESSIONS:
        matches = compile_sql92(text).matches
        on_record = Sql92MessageFilter(compile_sql92(text)).is_matched_by_commit_log
        on_dict = best_ns(lambda m=matches: m(PROPERTIES), args.calls)  # type: ignore[misc]
        on_bytes = best_ns(lambda f=on_record: f(record, None), args.calls)  # type: ignore[misc]
        print(f"{on_dict:9.0f} {on_bytes:9.0f}  {text}")
    print(
        f"{best_ns(lambda: record_properties(record), args.calls):9.0f} ns  full properties decode of the record"
    )
    print(
        f"{best_ns(lambda: compile_expression(EXPRESSIONS[5]), 500) / 1000:9.1f} us  uncached compile of #6"
    )


if __name__ == "__main__":
    main()
