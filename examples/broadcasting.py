"""Broadcasting: every consumer of the group gets every message (offsets kept locally)."""

import asyncio
import tempfile

from _common import namesrv_addr

from rocketq.client import ConsumeFromWhere, ConsumeResult, Message, MessageModel, Producer, PushConsumer


async def main(ns: str) -> None:
    counts = {"first": 0, "second": 0}

    def listener(name):
        def on_messages(msgs):
            counts[name] += len(msgs)
            return ConsumeResult.SUCCESS
        return on_messages

    with tempfile.TemporaryDirectory() as offsets_dir:
        consumers = []
        for name in counts:
            c = PushConsumer("example_broadcast_group", namesrv_addr=ns, message_model=MessageModel.BROADCASTING,
                             consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, offset_store_dir=offsets_dir)
            c.subscribe("ExampleBroadcastTopic", "*")
            c.register_listener(listener(name))
            consumers.append(c)
        async with Producer("example_broadcast_producer", namesrv_addr=ns) as producer:
            await producer.send(Message("ExampleBroadcastTopic", b"warm-up"))
            counts.update(first=0, second=0)
            for c in consumers:
                await c.start()
            await asyncio.sleep(2)
            for i in range(20):
                await producer.send(Message("ExampleBroadcastTopic", f"news {i}".encode()))
            for _ in range(300):
                if min(counts.values()) >= 20:
                    break
                await asyncio.sleep(0.1)
            for c in consumers:
                await c.shutdown()
    print("messages per consumer:", counts)


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
