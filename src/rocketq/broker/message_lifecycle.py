"""MessageLifecycle: builds, starts and stops what moves messages over time (delay, timer, POP revive).

The broker side of delayed, timer and POP messages, wired by the controller in one place: the ScheduleMessageService (delay
levels, rocketq.store.schedule), the TimerMessageService (timer messages, rocketq.store.timer) and the
PopService (SimpleConsumer state, broker/pop). Java starts the first two inside DefaultMessageStore and
the POP services in BrokerController; here the store stays a plain store and the broker owns them.
Only a master delivers (Java: a slave's ScheduleMessageService is not started); a slave still loads
the progress so that GET_ALL_DELAY_OFFSET answers. Start: load persisted progress, replay the POP revive
log, then start delivering. Stop: answer held POP requests, then (after the server stopped taking
requests) stop and persist.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rocketq.broker.context import BrokerContext
from rocketq.broker.pop.service import PopService
from rocketq.store.schedule import ScheduleMessageService, delay_offset_path
from rocketq.store.timer import TimerMessageService

log = logging.getLogger("rocketq.broker.lifecycle")


class MessageLifecycle:
    def __init__(self, ctx: BrokerContext, pop_processor: Any = None) -> None:
        self.ctx = ctx
        self.pop_processor = pop_processor
        self.root = Path(ctx.store_config.store_path_root_dir).expanduser()
        self._running: list[Any] = []

    async def start(self) -> None:
        """Raises ValueError naming a persisted progress file that does not parse."""
        ctx = self.ctx
        store = ctx.store
        if not hasattr(store, "queues"):
            log.warning("the store has no consume queues to read: delay, timer and POP services are off")
            return
        cfg = ctx.broker_config
        root = self.root
        schedule = ScheduleMessageService(
            store, ctx.delay_levels, delay_offset_path(root), ctx.clock,  # type: ignore[arg-type]
            persist_interval_ms=cfg.flush_delay_offset_interval_ms,
        )  # fmt: skip
        schedule.load()
        timer = TimerMessageService(store, root, ctx.clock, precision_ms=cfg.timer_precision_ms)  # type: ignore[arg-type]
        timer.load()
        pop = PopService(ctx)
        pop.replay()
        ctx.schedule_service, ctx.timer_service, ctx.pop_service = schedule, timer, pop
        if self.pop_processor is not None:
            store.add_arrival_listener(self.pop_processor.long_polling.on_message_arrival)
        if not cfg.is_master or ctx.store_config.is_slave:
            return
        for service in (schedule, timer, pop):
            await service.start()
            self._running.append(service)

    def drain(self) -> None:
        """Answer the POP requests held by long polling (before the server stops)."""
        if self.pop_processor is not None:
            self.pop_processor.long_polling.drain()

    async def shutdown(self) -> None:
        running, self._running = self._running, []
        for service in reversed(running):
            try:
                await service.shutdown()
            except Exception:
                log.exception("stopping %s failed", type(service).__name__)
