"""Sans-IO RocketMQ remoting protocol: commands, codes, frames, header codecs, typed headers, bodies.

Rule: nothing under this package imports asyncio, socket or uvloop (import-linter contract); it turns
bytes into RemotingCommands and back, and the caller owns the socket (the shape of h11).
"""
