"""POP consumption (RocketMQ 5, the SimpleConsumer's broker side): checkpoints, in-flight table, revive.

`PopService` (service.py) owns the state; the request processors are broker/processors/pop.py and
broker/processors/ack.py; held requests wait in `PopLongPolling` (long_polling.py).
"""
