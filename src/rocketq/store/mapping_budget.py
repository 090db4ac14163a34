"""MappingBudget: how many consume-queue files stay mapped at once; the least recently used go first.

No Java counterpart (Java maps every file of every queue and keeps its descriptor). A mapped file costs
a descriptor (Python's mmap keeps one) and a kernel map area, so a broker with thousands of queues
would run into the open-file limit (1,024 by default) and vm.max_map_count. Consume-queue files are
mapped on use and registered here; past the limit the least recently used are unmapped (their owner is
told first, so that it stops writing through the old map), and mapped again when next used. Loop
thread only.
"""

from __future__ import annotations

import resource
from collections import OrderedDict
from collections.abc import Callable

from rocketq.store.mapped_file import MappedFile

Release = Callable[[MappedFile], None]
MAX_AUTO_LIMIT = 32_768  # well below vm.max_map_count's default of 65,530
MIN_AUTO_LIMIT = 64


def auto_limit() -> int:
    """Half the soft open-file limit (the other half for connections, the commit log, the index)."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return 512
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return MAX_AUTO_LIMIT
    return max(MIN_AUTO_LIMIT, min(MAX_AUTO_LIMIT, soft // 2))


class MappingBudget:
    """Mapped files by last use; `touch` after mapping or using one, `forget` when it is gone."""

    def __init__(self, limit: int = 0) -> None:
        self.limit = limit if limit > 0 else auto_limit()
        self._files: OrderedDict[MappedFile, Release] = OrderedDict()
        self.unmapped = 0  # files unmapped to stay within the limit (for tests and runtime info)

    def __len__(self) -> int:
        return len(self._files)

    def touch(self, mapped: MappedFile, release: Release) -> None:
        files = self._files
        if mapped in files:
            files.move_to_end(mapped)
            return
        files[mapped] = release
        while len(files) > self.limit:
            oldest, release_oldest = files.popitem(last=False)
            if not oldest.closed:
                release_oldest(oldest)
                self.unmapped += 1

    def forget(self, mapped: MappedFile) -> None:
        self._files.pop(mapped, None)

    def clear(self) -> None:
        self._files.clear()
