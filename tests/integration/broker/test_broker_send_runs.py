"""Sends that one read brings in are taken together by a real broker: each still gets its own answer."""

from __future__ import annotations

import asyncio
import struct

import pytest
from broker_client import SMALL_STORE, BrokerTestClient

from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.frame import decode_frame_payload, encode_frame
from rocketq.testing.fixtures import ClusterFactory


async def _answers(reader: asyncio.StreamReader, count: int) -> dict[int, RemotingCommand]:
    answers: dict[int, RemotingCommand] = {}
    while len(answers) < count:
        (length,) = struct.unpack(">i", await reader.readexactly(4))
        cmd = decode_frame_payload(await reader.readexactly(length))
        assert cmd.opaque not in answers  # exactly one answer per request
        answers[cmd.opaque] = cmd
    return answers


@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])
async def test_sends_written_at_once_are_each_answered_and_a_bad_one_fails_alone(
    cluster_factory: ClusterFactory, flush: str
) -> None:
    cluster = await cluster_factory(broker_overrides={**SMALL_STORE, "flushDiskType": flush})
    addr = cluster.brokers[0].addr
    async with BrokerTestClient(addr) as broker:
        assert (await broker.create_topic("Runs", queues=2)).code == 0
    requests = []
    for i in range(12):
        topic = "SCHEDULE_TOPIC_XXXX" if i == 5 else "Runs"  # a topic no producer may send to
        header = BrokerTestClient.send_header(topic, {"WAIT": "true", "KEYS": f"k{i}"}, i % 2)
        code = RequestCode.SEND_MESSAGE if i % 3 == 0 else RequestCode.SEND_MESSAGE_V2
        ext = header.to_ext_fields() if code == RequestCode.SEND_MESSAGE else header.to_v2().to_ext_fields()
        requests.append(RemotingCommand.request(code, ext, b"m%d" % i))
    host, port = addr.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(b"".join(encode_frame(r) for r in requests))  # one write: the broker reads them together
        await writer.drain()
        answers = await asyncio.wait_for(_answers(reader, len(requests)), 10)
    finally:
        writer.close()
    assert set(answers) == {r.opaque for r in requests}
    for i, request in enumerate(requests):
        answer = answers[request.opaque]
        if i == 5:
            assert answer.code == ResponseCode.NO_PERMISSION and "SCHEDULE_TOPIC_XXXX" in (
                answer.remark or ""
            )
        else:
            assert answer.code == ResponseCode.SUCCESS, answer
            assert (answer.ext_fields or {})["queueId"] == str(i % 2)
    async with BrokerTestClient(addr) as broker:
        stored = [m.body for q in (0, 1) for m in await broker.pull_messages("cg", "Runs", q)]
    assert sorted(stored) == sorted(b"m%d" % i for i in range(12) if i != 5)
