"""Timer messages: deliver at an absolute time (msg.deliver_time_ms, epoch milliseconds).

The broker holds the message until that time (at most timerMaxDelaySec away, 3 days by default; further
is refused as MESSAGE_ILLEGAL); a time in the past is delivered at once.
"""

import asyncio
import time

from _common import namesrv_addr

from rocketq.client import Admin, ConsumeFromWhere, ConsumeResult, Message, Producer, PushConsumer
from rocketq.client.errors import MessageIllegalError

TOPIC = "ExampleTimerTopic"


async def main(ns: str) -> None:
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(TOPIC, read_queues=2, write_queues=2)
    arrived = asyncio.Event()

    def on_messages(msgs):
        for m in msgs:
            late = m.store_timestamp - int(m.properties["TIMER_OUT_MS"])
            print(f"delivered {m.body.decode()!r}, {late} ms after its time")
        arrived.set()
        return ConsumeResult.SUCCESS

    consumer = PushConsumer("example_timer_consumer", namesrv_addr=ns,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(on_messages)
    async with consumer, Producer("example_timer_producer", namesrv_addr=ns) as producer:
        msg = Message(TOPIC, b"wake me up in 3 seconds")
        msg.deliver_time_ms = time.time_ns() // 1_000_000 + 3_000
        result = await producer.send(msg)
        print(f"sent {result.msg_id} for {msg.deliver_time_ms}: {result.status.name}")
        too_far = Message(TOPIC, b"next year")
        too_far.deliver_time_ms = time.time_ns() // 1_000_000 + 365 * 86_400_000
        try:
            await producer.send(too_far)
        except MessageIllegalError as exc:
            print(f"refused as expected: {exc}")
        await asyncio.wait_for(arrived.wait(), 60)


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
