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

from rocketq.client.admin_cli.core import ACCESS_KEY_ENV, SECRET_KEY_ENV
from rocketq.dashboard.app import create_app
from rocketq.dashboard.login import read_users


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="rocketq dashboard", description="Serve the web dashboard of a rocketq / RocketMQ cluster."
    )
    parser.add_argument(
        "--namesrv-addr", "-n", default=os.environ.get("NAMESRV_ADDR", ""), help="host:port;host:port"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument(
        "--users-file",
        help="name=password lines (as rocketmq-dashboard's users.properties): turns the login page on",
    )
    parser.add_argument(
        "--access-key",
        default=os.environ.get(ACCESS_KEY_ENV),
        help=f"ACL access key the dashboard signs with (or ${ACCESS_KEY_ENV})",
    )
    parser.add_argument(
        "--secret-key", default=os.environ.get(SECRET_KEY_ENV), help=f"its secret key (or ${SECRET_KEY_ENV})"
    )
    parser.add_argument("--use-tls", action="store_true", help="connect to the cluster with TLS")
    parser.add_argument("--tls-ca-file", help="CA the servers' certificates must chain to")
    return parser.parse_args(argv)


def client_settings(args: argparse.Namespace) -> dict[str, object]:
    settings: dict[str, object] = {"use_tls": args.use_tls, "tls_ca_file": args.tls_ca_file}
    if args.access_key or args.secret_key:
        settings.update(access_key=args.access_key, secret_key=args.secret_key)
    return settings


async def serve(args: argparse.Namespace) -> int:
    try:  # bound here, so a port in use is one clear line and the READY line names the real port
        sock = socket.create_server((args.host, args.port))
    except OSError as exc:
        print(
            f"rocketq dashboard: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 1
    host, port = sock.getsockname()[:2]
    users = read_users(args.users_file) if args.users_file else None
    app = create_app(args.namesrv_addr, users=users, client=client_settings(args))
    config = uvicorn.Config(app, log_level=args.log_level, access_log=False)
    server = uvicorn.Server(config)
    print(f"READY dashboard http://{host}:{port}/", flush=True)
    await server.serve(sockets=[sock])
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    if not args.namesrv_addr:
        print("rocketq dashboard: --namesrv-addr is required (or set NAMESRV_ADDR)", file=sys.stderr)
        return 2
    if (args.access_key or args.secret_key) and not args.users_file:
        # Signing with an ACL account but letting anyone who reaches the port act with it would hand the
        # account out: a signed dashboard has a login.
        print(
            "rocketq dashboard: --access-key needs --users-file (a signed dashboard has a login)",
            file=sys.stderr,
        )
        return 2
    if args.users_file:
        try:
            read_users(args.users_file)
        except (OSError, ValueError) as exc:
            print(f"rocketq dashboard: --users-file: {exc}", file=sys.stderr)
            return 2
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s [%(name)s] %(message)s"
    )
    try:
        return asyncio.run(serve(args))
    except KeyboardInterrupt:
        return 0
