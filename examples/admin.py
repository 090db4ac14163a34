"""Admin: create a topic, look at the cluster, routes, queue offsets and a group's progress."""

import asyncio

from _common import namesrv_addr

from rocketq.client import Admin, Message, Producer


async def main(ns: str) -> None:
    async with Admin(namesrv_addr=ns) as admin:
        brokers = await admin.create_topic("ExampleAdminTopic", read_queues=4, write_queues=4)
        print("created on", brokers)
        info = await admin.cluster_info()
        for cluster, names in info.cluster_addr_table.items():
            print(f"cluster {cluster}: brokers {sorted(names)}")
        async with Producer("example_admin_producer", namesrv_addr=ns) as producer:
            sent = await producer.send(Message("ExampleAdminTopic", b"look me up", keys=["invoice-42"]))
        route = await admin.topic_route("ExampleAdminTopic")
        print("route:", [(q.broker_name, q.write_queue_nums) for q in route.queue_datas])
        for mq, offsets in (await admin.topic_status("ExampleAdminTopic")).items():
            print(f"  queue {mq.broker_name}/{mq.queue_id}: offsets {offsets.min_offset}..{offsets.max_offset}")
        found = await admin.query_message_by_id(sent.offset_msg_id)
        print("by id:", found.body.decode())
        for m in await admin.query_message_by_key("ExampleAdminTopic", "invoice-42"):
            print("by key:", m.body.decode(), m.keys)


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
