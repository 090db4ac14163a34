"""A push consumer: subscribe with a tag filter, register a listener, start."""

import asyncio

from _common import namesrv_addr

from rocketq.client import ConsumeFromWhere, ConsumeResult, Message, Producer, PushConsumer


async def main(ns: str) -> None:
    received: list[str] = []
    done = asyncio.Event()

    async def on_messages(msgs):
        for m in msgs:
            received.append(m.body.decode())
            print(f"got {m.body.decode()!r} tags={m.tags} queue={m.broker_name}/{m.queue_id} offset={m.queue_offset}")
        if len(received) >= 5:
            done.set()
        return ConsumeResult.SUCCESS

    consumer = PushConsumer("example_push_consumer", namesrv_addr=ns,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
    consumer.subscribe("ExamplePushTopic", "TagA || TagB")  # TagC is filtered out
    consumer.register_listener(on_messages)
    async with Producer("example_push_producer", namesrv_addr=ns) as producer:
        await producer.send(Message("ExamplePushTopic", b"warm-up", tags="TagC"))
        async with consumer:
            await asyncio.sleep(2)
            for i, tag in enumerate(["TagA", "TagB", "TagC", "TagA", "TagB", "TagA"]):
                await producer.send(Message("ExamplePushTopic", f"message {i} ({tag})".encode(), tags=tag))
            await asyncio.wait_for(done.wait(), 30)


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
