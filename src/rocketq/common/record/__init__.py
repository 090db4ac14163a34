"""The commit-log record format, in one place: what Apache RocketMQ keeps in MessageDecoder,
CommitLog.DefaultAppendMessageCallback / MessageExtEncoder and MessageExtBatchEncoder.

The same record is the commit-log entry, the PULL_MESSAGE / QUERY_MESSAGE body (records back to
back), the VIEW_MESSAGE_BY_ID body and the CHECK_TRANSACTION_STATE body, so store, broker and client
all read and write it through these modules (a leaf of rocketq.common: it imports nothing above it):

- layout: field offsets and sizes, magic codes, limits, host packing, offset msgId, CRC;
- properties: the properties string (encode, decode, one name's value);
- codec: pack a record or a batch body, eager decode, the body and properties read in place;
- lazy: decode into views that decode each field when it is first read (the SDK's pull path);
- check: validity of a stored record (recovery, dispatch, consume-queue units).

Optional compiled versions of the hot functions sit beside them (_crecord, built with Cython when a
C compiler is there; aiokafka's pattern): rocketq.common.record.accel says whether they are in use,
and ROCKETQ_NO_EXTENSIONS=1 forces the pure-Python ones. Both give byte-identical results.

This package imports no submodule by itself: rocketq.common.message imports `properties`, and the
codec imports rocketq.common.message.
"""
