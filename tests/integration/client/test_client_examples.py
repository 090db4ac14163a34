"""Every script in examples/ runs to completion against a real cluster."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
# Examples that need a broker set up differently, each run by its own test elsewhere.
TESTED_ELSEWHERE = {
    "sql92_filter.py": "tests/integration/sql92/test_sql92_example.py (enablePropertyFilter)",
    "spark_read_topic.py": "tests/integration/spark/test_spark_examples.py (needs Java and the spark extra)",
}
ALL_SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
SCRIPTS = [s for s in ALL_SCRIPTS if s not in TESTED_ELSEWHERE]
EXPECTED = {
    "producer.py": "SEND_OK",
    "async_producer.py": "1000 messages acknowledged",
    "batch.py": "100 messages",
    "orderly.py": "(in order)",
    "push_consumer.py": "got 'message",
    "broadcasting.py": "'second': 2",
    "lite_pull.py": "processed and committed 20",
    "admin.py": "by id: look me up",
    "blocking.py": "consumed: ['plain call",
    "transaction.py": "local transaction COMMIT_MESSAGE",
    # message lifecycle (delay, timer, POP)
    "delay_message.py": "delivered 'see you in a few seconds'",
    "timer_message.py": "refused as expected",
    "retry_and_dlq.py": "in the DLQ after 2 deliveries",
    "simple_consumer.py": "back again: 'forgotten job', retry 1",
}


def test_every_example_has_an_expectation() -> None:
    assert set(ALL_SCRIPTS) == set(EXPECTED) | set(TESTED_ELSEWHERE)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("script", SCRIPTS)
async def test_example_runs(cluster, script: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        script,
        "--namesrv-addr",
        cluster.namesrv_addr,
        cwd=EXAMPLES,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 90)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text
    assert EXPECTED[script] in text, text
