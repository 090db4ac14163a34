"""asyncio transport: the only place sockets exist (server, client, connection, dispatch)."""
