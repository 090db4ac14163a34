"""Transactional messages: the message is delivered only if the local transaction commits."""

import asyncio

from _common import namesrv_addr

from rocketq.client import LocalTransactionState, Message, TransactionProducer

ledger: dict[str, str] = {}


def execute_local_transaction(msg: Message, order_id: str) -> LocalTransactionState:
    ledger[order_id] = "paid"  # the local work, e.g. a database update
    return LocalTransactionState.COMMIT


def check(msg) -> LocalTransactionState:
    """Asked by the broker when it never learnt the outcome."""
    order_id = msg.keys[0] if msg.keys else ""
    return LocalTransactionState.COMMIT if ledger.get(order_id) == "paid" else LocalTransactionState.ROLLBACK


async def main(ns: str) -> None:
    async with TransactionProducer("example_tx_producer", namesrv_addr=ns, checker=check) as producer:
        result = await producer.send_in_transaction(
            Message("ExampleTxTopic", b"order 7 paid", keys=["order-7"]), executor=execute_local_transaction, arg="order-7"
        )
        print(f"half message {result.msg_id}: local transaction {result.local_transaction_state.value}")


if __name__ == "__main__":
    asyncio.run(main(namesrv_addr(__doc__)))
