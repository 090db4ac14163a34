"""The message store: CommitLog, ConsumeQueue and IndexFile on mapped files, flush, dispatch, recovery.

No network code. The broker talks to it only through MessageStore (message_store.py).
"""
