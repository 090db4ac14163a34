import random

from rocketq.client.producer.selectors import (
    SelectMessageQueueByHash,
    SelectMessageQueueByRandom,
    stable_hash,
)
from rocketq.common.message import Message, MessageQueue

MQS = [MessageQueue("T", "b", i) for i in range(8)]


def test_hash_selector_matches_java_arithmetic() -> None:
    sel = SelectMessageQueueByHash()
    # Java: "order-1".hashCode() = -1207111310 -> % 8 = -6 -> abs = 6
    assert stable_hash("order-1") == -1207111310
    assert sel(MQS, Message("T"), "order-1") == MQS[6]
    assert sel(MQS, Message("T"), 13) == MQS[5]
    assert sel(MQS, Message("T"), -13) == MQS[5]


def test_hash_selector_is_stable_per_key() -> None:
    sel = SelectMessageQueueByHash()
    for key in ["a", "b", 42, 2**40, b"k", True, ("x", 1)]:
        assert sel(MQS, Message("T"), key) == sel(MQS, Message("T"), key)
        assert sel(MQS, Message("T"), key) in MQS


def test_long_hash_like_java() -> None:
    assert stable_hash(2**40) == 256  # Long.hashCode(1L << 40)
    assert stable_hash(True) == 1231


def test_random_selector_covers_all() -> None:
    sel = SelectMessageQueueByRandom(random.Random(1))
    assert {sel(MQS, Message("T"), None) for _ in range(200)} == set(MQS)
