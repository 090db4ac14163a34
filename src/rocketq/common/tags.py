"""Tag hash (Java String.hashCode) and TAG subscription expressions (docs/protocol.md 4.9)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

SUB_ALL = "*"


def java_hash_code(text: str) -> int:
    """Java String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


# Tags repeat: the send processor, the store's put path and its rebuilds hash the same few again and
# again, so the one cache of their codes lives here.
hash_of_tag = functools.lru_cache(maxsize=65536)(java_hash_code)


def tags_code(tags: str | None) -> int:
    """The consume-queue tag code of a message: hash of its tag, 0 when it has none."""
    return hash_of_tag(tags) if tags else 0


@dataclass(frozen=True, slots=True)
class TagExpression:
    """A parsed TAG subscription: `*` (everything) or a set of tags and their hash codes."""

    sub_string: str = SUB_ALL
    tags: frozenset[str] = field(default_factory=frozenset)
    codes: frozenset[int] = field(default_factory=frozenset)

    @property
    def matches_all(self) -> bool:
        return self.sub_string == SUB_ALL

    def matches_code(self, code: int) -> bool:
        """Broker-side check on the consume-queue tag code (collisions pass)."""
        return self.matches_all or code in self.codes

    def matches_tag(self, tag: str | None) -> bool:
        """Client-side re-check on the exact tag string."""
        if self.matches_all:
            return True
        return tag is not None and tag in self.tags


def parse_tag_expression(expression: str | None) -> TagExpression:
    """Parse "TagA || TagB" / "*" / "" the way Java FilterAPI.buildSubscriptionData does."""
    if expression is None or expression.strip() in ("", SUB_ALL):
        return TagExpression()
    tags = [part.strip() for part in expression.split("||")]
    tags = [t for t in tags if t]
    if not tags:
        return TagExpression()
    return TagExpression(expression, frozenset(tags), frozenset(java_hash_code(t) for t in tags))
