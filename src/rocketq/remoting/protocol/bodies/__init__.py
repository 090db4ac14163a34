"""JSON bodies (RemotingSerializable ports) and the fastjson-compatible codec they go through.

fastjson.py (dumps/loads with fastjson's non-string map keys), jsonfields.py (lenient readers, the
JsonBody encode/decode mixin), heartbeat.py, consumer.py, admin.py; route.py and register.py hold the
NameServer bodies. Nothing is re-exported, so importing a body module stays cheap.
"""
