"""The daemons' logs: level and size-based rotation as configuration keys, stdlib handlers.

RocketMQ's daemons log through logback with a size-rolling appender (128 MB files, 10 kept, in
rmq_*_logback.xml); here the same numbers are the defaults of `logFileMaxSize` and `logFileBackups`, and
`logLevel` sets the level of every `rocketq.*` logger. Records go to stderr and to the log file.
"""

from __future__ import annotations

import logging
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rocketq.common.config import RocketConfig
from rocketq.common.errors import ConfigError

LOG_FORMAT = "%(asctime)s %(levelname)s [%(name)s] %(message)s"


class DaemonLogConfig(RocketConfig):
    """The log keys shared by NamesrvConfig and BrokerConfig."""

    log_level: Literal["DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL"] = Field(
        "INFO", alias="logLevel"
    )
    """Least severe level written: DEBUG, INFO, WARN(ING), ERROR or CRITICAL."""
    log_file_max_size_bytes: int = Field(128 * 1024 * 1024, alias="logFileMaxSize", ge=0)
    """The log file is rolled over to <name>.1 once it would pass this size (bytes); 0 never rolls."""
    log_file_backups: int = Field(10, alias="logFileBackups", ge=0)
    """How many rolled-over files (<name>.1 ... <name>.N) are kept."""


class DaemonFileHandler(RotatingFileHandler):
    """The log file, which may sit on a full disk: a line that cannot be written is dropped, and only the
    first of a run of failures is reported (one line on stderr) instead of logging's traceback for each;
    the daemon never stops or waits for its log. The buffered bytes of a failed write go out with the
    next write that succeeds."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.failing = False  # the last write failed
        self._failed_now = False

    def emit(self, record: logging.LogRecord) -> None:
        self._failed_now = False
        super().emit(record)  # calls handleError when the write (or the roll-over) fails
        if self.failing and not self._failed_now:
            self.failing = False
            _to_stderr(f"log file {self.baseFilename} is written again\n")

    def close(self) -> None:
        try:
            super().close()
        except OSError:  # the lines still buffered when the disk is full are lost with the file
            pass

    def handleError(self, record: logging.LogRecord) -> None:
        self._failed_now = True
        if not self.failing:
            self.failing = True
            _to_stderr(
                f"log file {self.baseFilename} cannot be written ({sys.exc_info()[1]!r}); "
                "its lines are dropped until it can be\n"
            )


def _to_stderr(text: str) -> None:
    try:
        sys.stderr.write(text)
    except (OSError, ValueError):  # no stderr either: nothing more to do
        pass


def setup_daemon_logging(log_file: Path, config: DaemonLogConfig, what: str) -> Path:
    """Log to stderr and to `log_file` (rotated by size); ConfigError when its directory is unusable."""
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        file_handler = DaemonFileHandler(
            log_file,
            maxBytes=config.log_file_max_size_bytes,
            backupCount=config.log_file_backups,
            encoding="utf-8",
        )
    except OSError as exc:
        raise ConfigError(f"{what} {str(log_file.parent)!r} is not usable: {exc.strerror}") from None
    fmt = logging.Formatter(LOG_FORMAT)
    logger = logging.getLogger("rocketq")
    for handler in (logging.StreamHandler(sys.stderr), file_handler):
        handler.setFormatter(fmt)
        logger.addHandler(handler)
    logger.setLevel("WARNING" if config.log_level == "WARN" else config.log_level)
    return log_file
