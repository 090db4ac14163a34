import json
from pathlib import Path

from rocketq.broker.config import BrokerConfig
from rocketq.broker.topic_config import TopicConfigManager, topic_problem
from rocketq.common import constants as C
from rocketq.common.clock import ManualClock
from rocketq.remoting.protocol.bodies.register import KVTable, TopicConfig


def manager(tmp: Path | None = None, **cfg: object) -> TopicConfigManager:
    return TopicConfigManager(BrokerConfig(**cfg), tmp, ManualClock())  # type: ignore[arg-type]


def test_system_topics_as_apache_creates_them() -> None:
    m = manager(brokerName="b1", brokerClusterName="C1")
    t = m.topic_config_table
    assert t["TBW102"].perm == 7 and t["TBW102"].write_queue_nums == 8
    assert t["SCHEDULE_TOPIC_XXXX"].read_queue_nums == 18
    assert t["SELF_TEST_TOPIC"].read_queue_nums == 1
    assert t["OFFSET_MOVED_EVENT"].read_queue_nums == 1
    assert t["BenchmarkTest"].read_queue_nums == 1024
    assert t["C1"].perm == 7 and t["C1"].read_queue_nums == 16
    assert t["b1"].perm == 7 and t["b1"].read_queue_nums == 1
    assert t["C1_REPLY_TOPIC"].read_queue_nums == 1
    assert "RMQ_SYS_TRACE_TOPIC" not in t
    assert m.is_system_topic("C1") and m.is_system_topic("rmq_sys_x") and m.is_system_topic("TBW102")
    assert not m.is_system_topic("Orders")


def test_no_tbw102_without_auto_create() -> None:
    m = manager(autoCreateTopicEnable=False)
    assert "TBW102" not in m.topic_config_table
    assert m.create_topic_in_send_message_method("New", "TBW102", "1.1.1.1:1", 4, 0) is None
    assert "New" not in m.topic_config_table


def test_create_on_send_inherits_from_tbw102_and_notifies() -> None:
    m = manager()
    changes: list[int] = []
    m.on_topics_changed = lambda: changes.append(1)
    before = m.data_version.counter
    tc = m.create_topic_in_send_message_method("New", "TBW102", "1.1.1.1:1", 4, 0)
    assert tc is not None
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (4, 4, 6)
    assert m.data_version.counter == before + 1 and changes == [1] and m.dirty
    # more queues asked than the template has: clamped to the template's write queues
    tc2 = m.create_topic_in_send_message_method("Big", "TBW102", "x", 64, 0)
    assert tc2 is not None and tc2.write_queue_nums == 8
    # the same call again returns the existing topic without a change
    assert m.create_topic_in_send_message_method("New", "TBW102", "x", 2, 0) is tc
    assert changes == [1, 1]


def test_template_without_inherit_creates_nothing() -> None:
    m = manager()
    assert m.create_topic_in_send_message_method("New", "SELF_TEST_TOPIC", "x", 4, 0) is None
    assert m.create_topic_in_send_message_method("New", "NoSuchTemplate", "x", 4, 0) is None


def test_retry_topic_creation() -> None:
    m = manager()
    tc = m.create_topic_in_send_message_back_method(C.retry_topic("g"), 1, 6, 0)
    assert (tc.read_queue_nums, tc.perm) == (1, 6)
    assert m.create_topic_in_send_message_back_method(C.retry_topic("g"), 3, 6, 0) is tc


def test_persist_reload_keeps_topics_and_version(tmp_path: Path) -> None:
    m = manager(tmp_path)
    m.update_topic_config(TopicConfig("Orders", 2, 2, 6))
    m.persist()
    data = json.loads((tmp_path / "topics.json").read_text())
    assert data["topicConfigTable"]["Orders"]["readQueueNums"] == 2
    again = manager(tmp_path)
    assert again.load()
    assert again.topic_config_table["Orders"].write_queue_nums == 2
    assert again.data_version == m.data_version
    assert "TBW102" in again.topic_config_table


def test_delete_and_order_config() -> None:
    m = manager()
    m.update_topic_config(TopicConfig("Orders", 2, 2, 6))
    m.update_order_topic_config(KVTable({"Orders": "broker-a:2"}))
    assert m.is_order_topic("Orders")
    m.update_order_topic_config(KVTable({}))
    assert not m.is_order_topic("Orders")
    assert m.delete_topic_config("Orders")
    assert not m.delete_topic_config("Orders")


def test_topic_problem_names_the_fault() -> None:
    assert topic_problem("ok_Topic-1%|") is None
    assert "blank" in (topic_problem("") or "")
    assert "illegal characters" in (topic_problem("a b") or "")
    assert "max length" in (topic_problem("x" * 128) or "")
