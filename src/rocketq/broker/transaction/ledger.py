"""Which half messages have an outcome: one bit per half-queue offset, rebuilt from the op messages.

Java keeps no such table: its checker matches op messages to half messages while it walks them
(TransactionalMessageServiceImpl.fillOpRemoveMap), and END_TRANSACTION does not look at ops at all,
so a commit that arrives twice is re-put twice. We keep the outcome of every half offset still in
the store (a bit each: 10 million transactions cost 1.25 MB) so that a repeated END_TRANSACTION, or an
answer to a check that crossed the producer's own commit, changes nothing, and the checker never asks
about a transaction whose outcome is known.
"""

from __future__ import annotations


class HalfOffsetLedger:
    """A growable bit set of non-negative queue offsets."""

    __slots__ = ("_bits", "_count")

    def __init__(self) -> None:
        self._bits = bytearray()
        self._count = 0

    def add(self, offset: int) -> bool:
        """Set `offset`; True when it was not set before. Negative offsets are ignored."""
        if offset < 0:
            return False
        index, bit = offset >> 3, 1 << (offset & 7)
        if index >= len(self._bits):
            self._bits.extend(bytes(max(index + 1 - len(self._bits), len(self._bits) // 2, 64)))
        if self._bits[index] & bit:
            return False
        self._bits[index] |= bit
        self._count += 1
        return True

    def discard(self, offset: int) -> None:
        if 0 <= offset and (offset >> 3) < len(self._bits):
            index, bit = offset >> 3, 1 << (offset & 7)
            if self._bits[index] & bit:
                self._bits[index] &= ~bit & 0xFF
                self._count -= 1

    def __contains__(self, offset: object) -> bool:
        if not isinstance(offset, int) or offset < 0:
            return False
        index = offset >> 3
        return index < len(self._bits) and bool(self._bits[index] & (1 << (offset & 7)))

    def __len__(self) -> int:
        return self._count
