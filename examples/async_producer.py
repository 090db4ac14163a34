"""Many sends in flight at once: send_async returns a future per message."""

import asyncio
import time

from _common import namesrv_addr

from rocketq.client import Message, Producer


async def main(ns: str) -> None:
    async with Producer("example_async_producer", namesrv_addr=ns) as producer:
        started = time.monotonic()
        futures = [producer.send_async(Message("ExampleTopic", f"async {i}".encode())) for i in range(1000)]
        results = await asyncio.gather(*futures)
        elapsed = time.monotonic() - started
        print(f"{len(results)} messages acknowledged in {elapsed:.2f}s ({len(results) / elapsed:,.0f} msg/s)")


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
