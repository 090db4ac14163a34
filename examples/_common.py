"""Shared by the examples: where the name servers are (--namesrv-addr, $NAMESRV_ADDR, or 127.0.0.1:9876)."""

import argparse
import os


def namesrv_addr(description: str) -> str:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--namesrv-addr", default=os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"))
    return parser.parse_args().namesrv_addr
