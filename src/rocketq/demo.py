"""`make run`: start a local NameServer and broker and show messages going through.

Filled in as the daemons and SDK land; until then it says what is built.
"""

from __future__ import annotations


def main() -> int:
    print("rocketq demo: the daemons are not built yet")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
