"""Lite pull: the application polls, then commits what it processed."""

import asyncio

from _common import namesrv_addr

from rocketq.client import ConsumeFromWhere, LitePullConsumer, Message, Producer


async def main(ns: str) -> None:
    async with Producer("example_lite_producer", namesrv_addr=ns) as producer:
        for i in range(20):
            await producer.send(Message("ExampleLiteTopic", f"job {i}".encode()))
    async with LitePullConsumer("example_lite_consumer", namesrv_addr=ns, auto_commit=False,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET) as consumer:
        consumer.subscribe("ExampleLiteTopic", "*")
        done = 0
        for _ in range(50):
            msgs = await consumer.poll(timeout_ms=500)
            for m in msgs:
                print(f"processing {m.body.decode()} (queue {m.queue_id}, offset {m.queue_offset})")
            done += len(msgs)
            await consumer.commit()  # processed: remember it on the broker
            if done >= 20:
                break
        print(f"processed and committed {done} messages")


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
