# cython: language_level=3, boundscheck=False, wraparound=False
"""rocketq.spark.arrow_batches.gather_columns_py, compiled: the same buffers, without a Python object
per record (the bodies and properties copied straight from the pull bodies into one buffer each)."""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memcpy

API_VERSION = 1

# The fields of rocketq.common.record.lazy.scan_record's tuple (as in arrow_batches).
cdef enum:
    QUEUE_ID = 2
    QUEUE_OFFSET = 4
    BORN_TS = 7
    STORE_TS = 10
    BODY_AT = 15
    BODY_LEN = 16
    PROPS_AT = 18
    PROPS_LEN = 19


cdef bytearray _buffer(Py_ssize_t size):
    return PyByteArray_FromStringAndSize(NULL, size)


cdef inline Py_ssize_t _copy(char* dst, Py_ssize_t pos, Py_ssize_t room, const char* src, Py_ssize_t src_len,
                             Py_ssize_t at, Py_ssize_t size) except -1:
    """Copy src[at:at + size] to dst[pos:], checked against both buffers; the position after it."""
    if at < 0 or size < 0 or at + size > src_len or pos + size > room:
        raise ValueError(f"gather_columns: {size} bytes at {at} are not in the pull body")
    memcpy(dst + pos, src + at, size)
    return pos + size


def gather_columns(list pulls):
    """The columns of the records of `pulls` ((body, scanned records) pairs), as arrow_batches'
    pure-Python gather_columns_py returns them."""
    cdef Py_ssize_t n = 0, body_total = 0, props_total = 0, i = 0
    cdef Py_ssize_t body_pos = 0, props_pos = 0
    cdef tuple r
    cdef bytes body
    cdef list records
    cdef const char* src
    cdef Py_ssize_t src_len
    for pull in pulls:
        for r in <list>pull[1]:
            n += 1
            body_total += <Py_ssize_t>r[BODY_LEN]
            props_total += <Py_ssize_t>r[PROPS_LEN]
    cdef bytearray body_values = _buffer(body_total)
    cdef bytearray props_values = _buffer(props_total)
    cdef bytearray body_offsets = _buffer(8 * (n + 1))
    cdef bytearray props_offsets = _buffer(8 * (n + 1))
    cdef bytearray queue_ids = _buffer(4 * n)
    cdef bytearray queue_offsets = _buffer(8 * n)
    cdef bytearray born = _buffer(8 * n)
    cdef bytearray stored = _buffer(8 * n)
    cdef char* bv = PyByteArray_AS_STRING(body_values)
    cdef char* pv = PyByteArray_AS_STRING(props_values)
    cdef int64_t* bo = <int64_t*>PyByteArray_AS_STRING(body_offsets)
    cdef int64_t* po = <int64_t*>PyByteArray_AS_STRING(props_offsets)
    cdef int32_t* qi = <int32_t*>PyByteArray_AS_STRING(queue_ids)
    cdef int64_t* qo = <int64_t*>PyByteArray_AS_STRING(queue_offsets)
    cdef int64_t* bt = <int64_t*>PyByteArray_AS_STRING(born)
    cdef int64_t* st = <int64_t*>PyByteArray_AS_STRING(stored)
    bo[0] = 0
    po[0] = 0
    for pull in pulls:
        body = <bytes>pull[0]
        records = <list>pull[1]
        src = body
        src_len = len(body)
        for r in records:
            if i >= n:
                raise ValueError("gather_columns: the records changed while being read")
            body_pos = _copy(bv, body_pos, body_total, src, src_len, r[BODY_AT], r[BODY_LEN])
            props_pos = _copy(pv, props_pos, props_total, src, src_len, r[PROPS_AT], r[PROPS_LEN])
            bo[i + 1] = body_pos
            po[i + 1] = props_pos
            qi[i] = r[QUEUE_ID]
            qo[i] = r[QUEUE_OFFSET]
            bt[i] = r[BORN_TS]
            st[i] = r[STORE_TS]
            i += 1
    if i != n:
        raise ValueError("gather_columns: the records changed while being read")
    return n, body_values, body_offsets, props_values, props_offsets, queue_ids, queue_offsets, born, stored
