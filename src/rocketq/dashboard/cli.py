"""`rocketq dashboard --namesrv-addr ADDR [--host 127.0.0.1] [--port 8080]`: serve the dashboard.

uvicorn runs the ASGI application. It listens on loopback unless told otherwise: the dashboard can
create and delete topics, so exposing it is the operator's explicit choice. `--port 0` picks a free
port; either way the address is printed as `READY dashboard http://host:port/` once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys

import uvicorn

from rocketq.dashboard.app import create_app


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rocketq dashboard", description="Serve the web dashboard of a rocketq / RocketMQ cluster.")
    parser.add_argument("--namesrv-addr", "-n", default=os.environ.get("NAMESRV_ADDR", ""), help="host:port;host:port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> int:
    try:  # bound here, so a port in use is one clear line and the READY line names the real port
        sock = socket.create_server((args.host, args.port))
    except OSError as exc:
        print(f"rocketq dashboard: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(create_app(args.namesrv_addr), log_level=args.log_level, access_log=False)
    server = uvicorn.Server(config)
    print(f"READY dashboard http://{host}:{port}/", flush=True)
    await server.serve(sockets=[sock])
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    if not args.namesrv_addr:
        print("rocketq dashboard: --namesrv-addr is required (or set NAMESRV_ADDR)", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
    try:
        return asyncio.run(serve(args))
    except KeyboardInterrupt:
        return 0
