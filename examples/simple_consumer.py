"""SimpleConsumer: receive messages that stay invisible for a while, ack them, or let them come back.

receive(max_messages, invisible_duration_ms) long-polls up to await_duration_ms; ack() commits;
change_invisible_duration() restarts the clock; a message neither acked nor extended becomes visible
again when its invisible time runs out (counting one retry), and goes to %DLQ%<group> past the
group's maximum.
"""

import asyncio

from _common import namesrv_addr

from rocketq.client import Admin, Message, Producer, SimpleConsumer

TOPIC = "ExampleSimpleTopic"


async def main(ns: str) -> None:
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(TOPIC, read_queues=2, write_queues=2)
    async with SimpleConsumer("example_simple_consumer", namesrv_addr=ns, subscriptions={TOPIC: "*"},
                              await_duration_ms=3_000) as consumer:
        while await consumer.receive(32, 10_000):  # start from a clean slate: earlier runs' leftovers
            pass
        async with Producer("example_simple_producer", namesrv_addr=ns) as producer:
            for body in (b"quick job", b"slow job", b"forgotten job"):
                await producer.send(Message(TOPIC, body))
        got = []
        while len(got) < 3:
            got += await consumer.receive(max_messages=16, invisible_duration_ms=2_000)
        for msg in got:
            job = msg.body.decode()
            if job == "quick job":
                await consumer.ack(msg)
                print(f"{job}: acked")
            elif job == "slow job":
                await consumer.change_invisible_duration(msg, 8_000)
                print(f"{job}: needs longer, hidden for 8 s more")
            else:
                print(f"{job}: not acked, it will come back in 2 s")
        again = []
        while not again:
            again = await consumer.receive(max_messages=16, invisible_duration_ms=10_000)
        for msg in again:
            print(f"back again: {msg.body.decode()!r}, retry {msg.reconsume_times}")
            await consumer.ack(msg)
        for msg in got:
            if msg.body == b"slow job":
                await consumer.ack(msg)
                print("slow job: done and acked")


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
