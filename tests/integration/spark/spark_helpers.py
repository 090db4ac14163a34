"""Helpers of the Spark integration tests: a synchronous LocalCluster, producing, reading a topic directly."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from rocketq.client.blocking import Admin, Message, Producer
from rocketq.spark.client import SyncClient
from rocketq.testing.cluster import LocalCluster

T = TypeVar("T")

CONF_DIR = Path(__file__).parent / "spark-conf"


def spark_env() -> dict[str, str]:
    """What Spark's processes need: our venv's python for the workers, loopback only, quiet logs."""
    return {
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_CONF_DIR": str(CONF_DIR),
    }


@contextmanager
def running_cluster(tmp: Path, **kwargs: Any) -> Iterator[LocalCluster]:
    """A LocalCluster started and closed from synchronous code (each step on its own event loop)."""
    cluster = LocalCluster(tmp, **kwargs)
    asyncio.run(cluster.start())
    try:
        yield cluster
    except BaseException:
        print(cluster.log_tails(40))
        raise
    finally:
        asyncio.run(cluster.close())


def create_topic(namesrv: str, topic: str, queues: int) -> None:
    with Admin(namesrv_addr=namesrv) as admin:
        admin.create_topic(topic, read_queues=queues, write_queues=queues)


def produce(
    namesrv: str, topic: str, count: int, *, body_size: int = 64, tag: str = "t", start: int = 0
) -> list[str]:
    """Send `count` messages (body `<topic>-<i>` padded, KEYS k<i>, user property seq=i); their msg ids."""
    ids = []
    with Producer(f"pg-{topic}", namesrv_addr=namesrv) as producer:
        for i in range(start, start + count):
            body = f"{topic}-{i}".encode().ljust(body_size, b".")
            msg = Message(topic, body, tags=tag, keys=f"k{i}", properties={"seq": str(i)})
            ids.append(producer.send(msg).msg_id)
    return ids


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = 30.0, every_s: float = 0.2) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(every_s)


def bounds(namesrv: str, topic: str) -> dict[tuple[str, int], tuple[int, int]]:
    with SyncClient(namesrv) as client:
        routes = client.routes(topic)
        return {(r.broker_name, r.queue_id): b for r, b in zip(routes, client.bounds(routes), strict=True)}


def read_json_topic(namesrv: str, topic: str) -> list[dict[str, Any]]:
    """Every message of `topic` (all queues) decoded as JSON, without Spark."""
    out: list[dict[str, Any]] = []
    with SyncClient(namesrv) as client:
        routes = client.routes(topic)
        for route, (low, high) in zip(routes, client.bounds(routes), strict=True):
            for msgs in client.read_range(route, low, high):
                out.extend(json.loads(m.body) for m in msgs)
    return out
