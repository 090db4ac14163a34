"""The same SDK without asyncio: rocketq.client.blocking, for plain scripts and threads."""

import threading

from _common import namesrv_addr

from rocketq.client.blocking import ConsumeFromWhere, ConsumeResult, Message, Producer, PushConsumer


def main(ns: str) -> None:
    got = []
    done = threading.Event()

    def on_messages(msgs):  # runs on a consumer thread
        got.extend(m.body.decode() for m in msgs)
        if len(got) >= 5:
            done.set()
        return ConsumeResult.SUCCESS

    with Producer("example_blocking_producer", namesrv_addr=ns) as producer:
        producer.send(Message("ExampleBlockingTopic", b"warm-up"))
        consumer = PushConsumer("example_blocking_consumer", namesrv_addr=ns,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
        consumer.subscribe("ExampleBlockingTopic", "*")
        consumer.register_listener(on_messages)
        with consumer:
            done.wait(2)
            got.clear()
            for i in range(5):
                result = producer.send(Message("ExampleBlockingTopic", f"plain call {i}".encode()))
                print(result.status.value, result.msg_id)
            done.wait(30)
    print("consumed:", got)


if __name__ == "__main__":
    main(namesrv_addr(__doc__))
