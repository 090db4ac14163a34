from client_routes import BD, QD, Route, two_brokers

from rocketq.client.route import (
    RoundRobinIndex,
    broker_addr_table,
    route_changed,
    to_publish_info,
    to_subscribe_queues,
)
from rocketq.common.message import MessageQueue


def test_publish_info_sorted_by_broker_writable_masters_only() -> None:
    route = Route(
        [QD("broker-c", perm=4), QD("broker-b"), QD("broker-a", write_queue_nums=2), QD("broker-d")],
        [
            BD("broker-a", {0: "a:1"}),
            BD("broker-b", {0: "b:1", 1: "b:2"}),
            BD("broker-c", {0: "c:1"}),
            BD("broker-d", {1: "d:2"}),  # no master: not writable for producers
        ],
    )
    info = to_publish_info("T", route)
    assert info.message_queues == [MessageQueue("T", "broker-a", i) for i in range(2)] + [
        MessageQueue("T", "broker-b", i) for i in range(4)
    ]
    assert not info.order_topic
    assert info.queue_count_of_broker("broker-a") == 2
    assert info.queue_count_of_broker("broker-c") == -1
    assert info.queue_count_of_broker(None) == -1


def test_order_topic_conf_wins() -> None:
    route = two_brokers()
    route.order_topic_conf = "broker-x:2;broker-y:1"
    info = to_publish_info("T", route)
    assert info.order_topic
    assert info.message_queues == [
        MessageQueue("T", "broker-x", 0),
        MessageQueue("T", "broker-x", 1),
        MessageQueue("T", "broker-y", 0),
    ]


def test_subscribe_queues_use_read_counts_and_perm() -> None:
    route = Route(
        [QD("a", read_queue_nums=3, write_queue_nums=1), QD("b", perm=2)],
        [BD("a", {0: "x"}), BD("b", {0: "y"})],
    )
    assert to_subscribe_queues("T", route) == {MessageQueue("T", "a", i) for i in range(3)}


def test_round_robin_visits_every_queue() -> None:
    info = to_publish_info("T", two_brokers())
    picked = [info.select_one() for _ in range(8)]
    assert sorted(picked) == sorted(info.message_queues)


def test_select_avoids_last_broker() -> None:
    info = to_publish_info("T", two_brokers())
    for _ in range(20):
        assert info.select_one("broker-a").broker_name == "broker-b"
    single = to_publish_info("T", Route([QD("a")], [BD("a", {0: "x"})]))
    assert single.select_one("a").broker_name == "a"  # nothing else: same broker


def test_index_is_non_negative_and_wraps() -> None:
    idx = RoundRobinIndex(start=0x7FFFFFFE)
    values = [idx.next() for _ in range(4)]
    assert values == [0x7FFFFFFF, 0, 1, 2]


def test_route_changed_and_addr_table() -> None:
    a, b = two_brokers(), two_brokers()
    assert route_changed(None, a)
    assert not route_changed(a, b)
    b.broker_datas[0].broker_addrs[1] = "slave:1"
    assert route_changed(a, b)
    assert broker_addr_table(b)["broker-a"] == {0: "127.0.0.1:10911", 1: "slave:1"}
