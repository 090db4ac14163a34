"""Send messages one by one and print where each one went."""

import asyncio

from _common import namesrv_addr

from rocketq.client import Message, Producer


async def main(ns: str) -> None:
    async with Producer("example_producer", namesrv_addr=ns) as producer:
        for i in range(10):
            msg = Message("ExampleTopic", f"hello {i}".encode(), tags="TagA", keys=[f"order-{i}"])
            result = await producer.send(msg)
            print(f"{result.status.value} id={result.msg_id} queue={result.queue.broker_name}/{result.queue.queue_id} offset={result.queue_offset}")


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
