"""SQL92 filtering: the broker delivers only the messages whose properties match the expression.

Needs a broker started with enablePropertyFilter=true, e.g.
    rocketq broker --namesrv-addr 127.0.0.1:9876 --enablePropertyFilter true
"""

import asyncio
import sys

from _common import namesrv_addr

from rocketq.client import (
    Admin,
    ConsumeFromWhere,
    ConsumeResult,
    Message,
    MessageSelector,
    Producer,
    PushConsumer,
)
from rocketq.client.errors import MQClientError

TOPIC = "ExampleSqlTopic"
EXPRESSION = "region = 'eu' AND price BETWEEN 100 AND 500"
ORDERS = [("eu", 50), ("eu", 120), ("us", 300), ("eu", 300), ("eu", 480), ("ap", 200), ("eu", 900)]


async def main(ns: str) -> int:
    received: list[str] = []
    done = asyncio.Event()

    def on_messages(msgs):
        for m in msgs:
            received.append(m.body.decode())
            print(f"got {m.body.decode()} (region={m.properties['region']}, price={m.properties['price']})")
        if len(received) >= 3:
            done.set()
        return ConsumeResult.SUCCESS

    consumer = PushConsumer("example_sql_consumer", namesrv_addr=ns,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(TOPIC, MessageSelector.by_sql(EXPRESSION))
    consumer.register_listener(on_messages)
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(TOPIC, read_queues=4, write_queues=4)  # routable before anyone subscribes
    async with Producer("example_sql_producer", namesrv_addr=ns) as producer:
        for i, (region, price) in enumerate(ORDERS):
            msg = Message(TOPIC, f"order {i}".encode(), properties={"region": region, "price": str(price)})
            await producer.send(msg)
        try:
            await consumer.start()  # the broker checks the expression here
        except MQClientError as exc:
            print(f"the broker refused the subscription: {exc}", file=sys.stderr)
            print("start the broker with --enablePropertyFilter true", file=sys.stderr)
            return 2
        try:
            await asyncio.wait_for(done.wait(), 30)
        finally:
            await consumer.shutdown()
    print(f"matched {len(received)} of {len(ORDERS)} orders: {sorted(received)}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(namesrv_addr(__doc__))))
