"""The broker side of transactional messages (docs/protocol.md 2.9).

Ports org.apache.rocketmq.broker.transaction (4.9.8): half.py (the send path's half-message rewrite),
bridge.py (store reads and writes, the CID_RMQ_SYS_TRANS progress), ledger.py + service.py (commit /
rollback, each applied once), check.py (the check-back service), runtime.py (what the controller
builds, starts and stops). END_TRANSACTION (37) is served by broker/processors/end_transaction.py.
"""
