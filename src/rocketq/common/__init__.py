"""Shared model and infrastructure: message model, constants, errors, clock, lifecycle, config.

Depends on nothing else in rocketq; every other subpackage may import it.
"""

from rocketq.common.errors import RocketQError
from rocketq.common.message import Message, MessageExt, MessageQueue

__all__ = ["Message", "MessageExt", "MessageQueue", "RocketQError"]
