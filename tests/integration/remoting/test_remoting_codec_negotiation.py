"""Header codec negotiation over real sockets: msgpack once the server said so, JSON with a server that never answers."""

from __future__ import annotations

from typing import Any

from remoting_helpers import EchoProcessor, addr_of

from rocketq.remoting.protocol.codes import SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport.codec_negotiation import ACCEPT_FIELD, OFFER_FIELD

ECHO = 1000


class SilentOnOfferProcessor:
    """Answers through conn.send_response itself, as a server that knows nothing of the offer would."""

    def __init__(self) -> None:
        self.seen: list[RemotingCommand] = []

    async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand | None:
        self.seen.append(request)
        conn.send_response(request.make_response(0, body=request.body))  # same opaque, response flag
        return None


async def _negotiating_client(server_factory: Any, client_factory: Any, processor: Any) -> tuple[Any, str]:
    """A client that offers msgpack, and the address of a server serving ECHO with `processor`."""
    server = await server_factory(lambda s: s.register_processor(ECHO, processor))
    client = client_factory()
    client.negotiate_msgpack = True
    return client, addr_of(server)


async def test_client_switches_to_msgpack_once_the_server_accepts(
    server_factory: Any, client_factory: Any
) -> None:
    echo = EchoProcessor()
    client, addr = await _negotiating_client(server_factory, client_factory, echo)

    first = await client.invoke_sync(addr, RemotingCommand.request(ECHO, {"k": "v"}, b"1"), 3000)
    assert echo.seen[0].serialize_type == SerializeType.JSON
    assert echo.seen[0].ext_fields == {"k": "v", OFFER_FIELD: "msgpack"}
    assert first.ext_fields is not None and first.ext_fields[ACCEPT_FIELD] == "msgpack"

    second = await client.invoke_sync(addr, RemotingCommand.request(ECHO, {"k": "v"}, b"2"), 3000)
    assert echo.seen[1].serialize_type == SerializeType.MSGPACK
    assert echo.seen[1].ext_fields == {"k": "v"}  # no more offers
    assert second.serialize_type == SerializeType.MSGPACK and second.body == b"2"

    fut = client.invoke_async(addr, RemotingCommand.request(ECHO, None, b"3"), 3000)
    assert (await fut).body == b"3"
    assert echo.seen[2].serialize_type == SerializeType.MSGPACK


async def test_client_keeps_json_when_the_server_never_answers(
    server_factory: Any, client_factory: Any
) -> None:
    silent = SilentOnOfferProcessor()
    client, addr = await _negotiating_client(server_factory, client_factory, silent)
    for i in range(3):
        response = await client.invoke_sync(addr, RemotingCommand.request(ECHO, {"i": str(i)}, b"x"), 3000)
        assert response.code == 0 and response.serialize_type == SerializeType.JSON
    assert [r.serialize_type for r in silent.seen] == [SerializeType.JSON] * 3
    assert all(r.ext_fields is not None and r.ext_fields[OFFER_FIELD] == "msgpack" for r in silent.seen)


async def test_without_negotiation_nothing_is_offered(server_factory: Any, client_factory: Any) -> None:
    echo = EchoProcessor()
    server = await server_factory(lambda s: s.register_processor(ECHO, echo))
    client = client_factory()  # negotiate_msgpack is off by default at the transport level
    for _ in range(2):
        response = await client.invoke_sync(
            addr_of(server), RemotingCommand.request(ECHO, {"k": "v"}, b""), 3000
        )
        assert response.ext_fields == {"k": "v"}
    assert [r.serialize_type for r in echo.seen] == [SerializeType.JSON] * 2
