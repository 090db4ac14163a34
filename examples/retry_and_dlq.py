"""Consume retry and the dead-letter queue.

A listener that returns RECONSUME_LATER (or raises) gets the message again later, with stepped back-off
(delay level 3 + reconsume times: 10 s, 30 s, 1 m, ...). Past max_reconsume_times the broker moves it to
%DLQ%<group>, where an admin query (or a consumer of that topic) still finds it.
"""

import asyncio
import time

from _common import namesrv_addr

from rocketq.client import Admin, ConsumeFromWhere, ConsumeResult, Message, Producer, PushConsumer

TOPIC = "ExampleRetryTopic"
GROUP = "example_retry_consumer"


async def main(ns: str) -> None:
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(TOPIC, read_queues=2, write_queues=2)
        started = time.monotonic()

        def always_fails(msgs):
            for m in msgs:
                print(f"{time.monotonic() - started:5.1f} s: attempt {m.reconsume_times + 1} of {m.body.decode()!r} fails")
            return ConsumeResult.RECONSUME_LATER

        consumer = PushConsumer(GROUP, namesrv_addr=ns, max_reconsume_times=1,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
        consumer.subscribe(TOPIC, "*")
        consumer.register_listener(always_fails)
        async with consumer, Producer("example_retry_producer", namesrv_addr=ns) as producer:
            await producer.send(Message(TOPIC, b"order 1234", keys=["order-1234"]))
            for _ in range(120):  # the first retry comes after 10 s (delay level 3)
                await asyncio.sleep(0.5)
                try:
                    dead = await admin.query_message_by_key(f"%DLQ%{GROUP}", "order-1234")
                except Exception:
                    continue  # the DLQ topic does not exist yet
                if dead:
                    print(f"in the DLQ after {dead[0].reconsume_times} deliveries: {dead[0].body.decode()!r} "
                          f"(from {dead[0].properties['RETRY_TOPIC']})")
                    return
        raise SystemExit("the message never reached the DLQ")


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
