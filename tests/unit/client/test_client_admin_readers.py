"""Admin's read-only requests go to a broker's master, or to a slave while the master is gone (Java's
BrokerData.selectBrokerAddr); writes (offset resets, groups, topics) only ever to masters."""

from rocketq.client.admin import Admin
from rocketq.remoting.protocol.bodies.route import BrokerData, TopicRouteData


async def test_reads_go_to_the_master_or_else_a_slave_and_writes_only_to_masters() -> None:
    admin = Admin(namesrv_addr="127.0.0.1:9876")
    route = TopicRouteData(
        broker_datas=[
            BrokerData("c", "broker-b", {1: "10.0.0.2:10931", 2: "10.0.0.3:10941"}),  # master gone
            BrokerData("c", "broker-a", {0: "10.0.0.1:10911", 1: "10.0.0.1:10931"}),
            BrokerData("c", "broker-c", {}),
        ]
    )

    async def topic_route(topic: str) -> TopicRouteData:
        return route

    admin.topic_route = topic_route  # type: ignore[method-assign]
    assert await admin._topic_readers("T") == [("broker-a", "10.0.0.1:10911"), ("broker-b", "10.0.0.2:10931")]
    assert await admin._topic_masters("T") == [("broker-a", "10.0.0.1:10911")]
