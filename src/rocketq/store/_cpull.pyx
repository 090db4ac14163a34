# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled twin of the pull's per-unit loop (rocketq.store.get_service.GetService._collect_py).

Built by setup.py when Cython and a C compiler are there; get_service loads it through
rocketq.common.record.accel.load_extension unless ROCKETQ_NO_EXTENSIONS=1. It walks the consume-queue
units of one pull and copies each record out of the commit-log mapping in C; everything that is not the
plain case (a file switch, a filter, a damaged unit) is the same Python call the pure loop makes, in the
same order, so both give the same records, offsets, scanned count and status: tests/unit/store runs both.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.object cimport PyObject
from cpython.ref cimport Py_XDECREF
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy


cdef extern from "Python.h":
    # The owned reference of a new bytes object, and its resize in place (the only reference held).
    PyObject* _new_bytes "PyBytes_FromStringAndSize"(const char* v, Py_ssize_t n) except NULL
    int _PyBytes_Resize(PyObject** s, Py_ssize_t n) except -1

# What get_service expects: a module built from an older .pyx is not used.
API_VERSION = 2

# What the pure loop's status ends as, without a record found (FOUND when records were found).
NO_MATCHED = 0
WAS_REMOVING = 1

cdef int32_t MESSAGE_MAGIC = -626843481  # layout.MESSAGE_MAGIC_CODE (0xDAA320A7)
cdef Py_ssize_t UNIT_SIZE = 20  # consume_queue.CQ_UNIT: phys (8), size (4), tags code (8)


cdef inline uint32_t _u32(const uint8_t* p) noexcept:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3]


cdef inline int32_t _i32(const uint8_t* p) noexcept:
    return <int32_t>_u32(p)


cdef inline int64_t _i64(const uint8_t* p) noexcept:
    return <int64_t>((<uint64_t>_u32(p) << 32) | <uint64_t>_u32(p + 4))


def collect_units(
    bytes units, object commit_log, object message_filter, object skip_bad_unit, str topic,
    int32_t queue_id, int64_t offset, Py_ssize_t max_count, int64_t max_phy, int64_t memory,
    int64_t memory_bytes, int64_t memory_count, int64_t disk_bytes, int64_t disk_count, Py_ssize_t fixed_size,
    bint joined=False,
):
    """(kind, scanned, records, queue offsets, max_phy_pulling): GetService._collect_py's loop over `units`
    (kind NO_MATCHED or WAS_REMOVING when no record was found). commit_log is read through its
    written_part and roll_next_file; the mapping's buffer is held only between two of those calls.
    joined: instead of the records' list, their bytes one after the other (b"".join(records)), each record
    copied once, from the mapping into that buffer."""
    cdef Py_ssize_t n = len(units)
    if n % UNIT_SIZE:
        raise ValueError(f"consume-queue units of {n} bytes: not a multiple of {UNIT_SIZE}")
    cdef const uint8_t* u = <const uint8_t*><const char*>units
    cdef Py_buffer view
    cdef bint held = False
    cdef const uint8_t* mm = NULL
    cdef int64_t file_start = 0, file_end = 0, next_file_start = -1, max_phy_pulling = 0, total = 0
    cdef int64_t phys, tags_code, pos, limit_bytes, limit_count
    cdef int32_t size
    cdef Py_ssize_t i, count = 0, scanned = 0
    cdef int kind = NO_MATCHED
    cdef list records = []
    cdef list offsets = []
    cdef object record
    cdef bint filtered = message_filter is not None
    cdef PyObject* body = NULL  # joined: the records so far, in a buffer of `capacity` bytes
    cdef int64_t capacity = 0
    joined_records = None
    if joined:  # room for the first max_count units; grown (doubled) when skipped ones need more
        for i in range(0, min(n, max_count * UNIT_SIZE), UNIT_SIZE):
            size = _i32(u + i + 8)
            if size > 0:
                capacity += size
        body = _new_bytes(NULL, max(capacity, 1))
    try:
        for i in range(0, n, UNIT_SIZE):
            phys = _i64(u + i)
            size = _i32(u + i + 8)
            max_phy_pulling = phys
            if next_file_start >= 0 and phys < next_file_start:
                scanned += 1
                continue
            if total:  # Java isTheBatchFull (nothing found yet: never full)
                if count >= max_count:
                    break
                if max_phy - phys > memory:
                    limit_bytes, limit_count = disk_bytes, disk_count
                else:
                    limit_bytes, limit_count = memory_bytes, memory_count
                if total + size > limit_bytes or count > limit_count - 1:
                    break
            scanned += 1
            if size < fixed_size:
                continue  # a hole left by a crash (or a torn unit: no record is this small)
            if filtered:
                tags_code = _i64(u + i + 12)
                if not message_filter.is_matched_by_consume_queue(tags_code):
                    continue
            if not file_start <= phys or phys + size > file_end:
                if held:  # released before the store is asked: the file it maps may be unmapped meanwhile
                    PyBuffer_Release(&view)
                    held = False
                part = commit_log.written_part(phys)
                if part is None or phys + size > part[1]:
                    file_start = file_end = 0
                    if total == 0:
                        kind = WAS_REMOVING
                    next_file_start = commit_log.roll_next_file(phys)
                    continue
                file_start, file_end = part[0], part[1]
                PyObject_GetBuffer(part[2], &view, PyBUF_SIMPLE)
                held = True
                mm = <const uint8_t*>view.buf
            pos = phys - file_start
            if (
                _i32(mm + pos + 4) != MESSAGE_MAGIC
                or _i32(mm + pos) != size
                or _i64(mm + pos + 28) != phys
                or _i32(mm + pos + 12) != queue_id
                or _i64(mm + pos + 20) != offset + scanned - 1
            ):
                record = PyBytes_FromStringAndSize(<const char*>(mm + pos), size)
                skip_bad_unit(topic, queue_id, offset + scanned - 1, record, phys, size)
                continue
            record = None
            if filtered:
                record = PyBytes_FromStringAndSize(<const char*>(mm + pos), size)
                if not message_filter.is_matched_by_commit_log(record, None):
                    continue
            if joined:
                if total + size > capacity:
                    capacity = max(2 * capacity, total + size)
                    _PyBytes_Resize(&body, capacity)
                memcpy(PyBytes_AS_STRING(<object>body) + total, mm + pos, size)
            else:
                records.append(PyBytes_FromStringAndSize(<const char*>(mm + pos), size) if record is None else record)
            offsets.append(offset + scanned - 1)
            count += 1
            total += size
            next_file_start = -1
        if joined:
            _PyBytes_Resize(&body, total)
            joined_records = <object>body
    finally:
        if held:
            PyBuffer_Release(&view)
        Py_XDECREF(body)
    return kind, scanned, joined_records if joined else records, offsets, max_phy_pulling
