"""Delay levels: a message with delay_level N is delivered after the broker's Nth messageDelayLevel.

With the default levels "1s 5s 10s 30s 1m ...", level 2 waits 5 seconds. A level above the last one is
clamped to the last one; a batch cannot carry a delay.
"""

import asyncio
import time

from _common import namesrv_addr

from rocketq.client import Admin, ConsumeFromWhere, ConsumeResult, Message, Producer, PushConsumer

TOPIC = "ExampleDelayTopic"


async def main(ns: str) -> None:
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(TOPIC, read_queues=2, write_queues=2)
    arrived = asyncio.Event()

    def on_messages(msgs):
        for m in msgs:
            waited = (m.store_timestamp - m.born_timestamp) / 1000
            print(f"delivered {m.body.decode()!r} after {waited:.1f} s (delay level {m.delay_level})")
        arrived.set()
        return ConsumeResult.SUCCESS

    consumer = PushConsumer("example_delay_consumer", namesrv_addr=ns,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(on_messages)
    async with consumer, Producer("example_delay_producer", namesrv_addr=ns) as producer:
        msg = Message(TOPIC, b"see you in a few seconds")
        msg.delay_level = 2
        sent_at = time.monotonic()
        result = await producer.send(msg)
        print(f"sent {result.msg_id} with delay level 2: {result.status.name}")
        await asyncio.wait_for(arrived.wait(), 60)
        print(f"the consumer saw it {time.monotonic() - sent_at:.1f} s after sending")


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
