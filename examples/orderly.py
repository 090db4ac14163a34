"""Orderly messages: one order's events go to one queue and are consumed in order."""

import asyncio
from collections import defaultdict

from _common import namesrv_addr

from rocketq.client import ConsumeFromWhere, ConsumeResult, Message, Producer, PushConsumer
from rocketq.client.producer.selectors import SelectMessageQueueByHash

STEPS = ["created", "paid", "shipped", "delivered"]


async def main(ns: str) -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    done = asyncio.Event()

    def on_messages(msgs):
        for m in msgs:
            order, step = m.body.decode().split(":")
            seen[order].append(step)
        if sum(len(v) for v in seen.values()) >= 5 * len(STEPS):
            done.set()
        return ConsumeResult.SUCCESS

    consumer = PushConsumer("example_orderly_consumer", namesrv_addr=ns,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
    consumer.subscribe("ExampleOrderTopic", "*")
    consumer.register_orderly_listener(on_messages)
    async with Producer("example_orderly_producer", namesrv_addr=ns) as producer:
        await producer.send(Message("ExampleOrderTopic", b"warm-up:created"))  # the topic exists from here on
        seen.clear()
        async with consumer:
            await asyncio.sleep(2)  # let the consumer lock its queues
            for step in STEPS:
                for order in range(5):
                    await producer.send(Message("ExampleOrderTopic", f"order-{order}:{step}".encode()),
                                        selector=SelectMessageQueueByHash(), arg=f"order-{order}")
            await asyncio.wait_for(done.wait(), 30)
    for order, steps in sorted(seen.items()):
        if order.startswith("order-"):
            print(order, " -> ".join(steps), "(in order)" if steps == STEPS else "(OUT OF ORDER)")


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
