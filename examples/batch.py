"""Send 100 messages of one topic in a single request."""

import asyncio

from _common import namesrv_addr

from rocketq.client import Message, Producer


async def main(ns: str) -> None:
    async with Producer("example_batch_producer", namesrv_addr=ns) as producer:
        batch = [Message("ExampleTopic", f"batch item {i}".encode(), tags="Batch") for i in range(100)]
        result = await producer.send_batch(batch)
        print(f"{result.status.value}: {len(result.msg_id.split(','))} messages from offset {result.queue_offset} "
              f"of {result.queue.broker_name}/{result.queue.queue_id}")


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
