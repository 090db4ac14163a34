# cython: language_level=3, boundscheck=False, wraparound=False
"""rocketq.spark.arrow_batches.gather_columns_py, compiled: the same buffers, without a Python object
per record (the bodies and properties copied straight from the pull bodies into one buffer each); and
split_properties, the property map column's buffers in one pass over those sections."""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memchr, memcmp, memcpy, memset

API_VERSION = 2

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


cdef enum:
    MAX_WANTED = 8  # names split_properties looks up per row


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


def split_properties(texts, offsets, Py_ssize_t n, tuple wanted):
    """The properties sections of `n` rows (`texts` back to back, `offsets` their n + 1 native int64
    bounds: gather_columns' buffers), split into the map column's buffers in one pass: what
    arrow_batches._properties builds with Arrow's string kernels (segments at U+0002, each at its
    first U+0001; an empty section is a row without properties).

    None where those kernels' result is not the reference's either (a segment without U+0001, an
    empty name or value, a name twice in one row: the caller takes the message-based builder). Else
    (pairs, map offsets, name offsets, names, value offsets, values, found): int32 offsets, and per
    name of `wanted` (bytes) a validity bitmap and the int32 index of the row's pair that has it.
    The sections are not checked for UTF-8 here (the caller validates them as a whole: U+0001 and
    U+0002 never occur inside a multi-byte sequence, so each piece is valid when the whole is).
    """
    cdef const unsigned char[::1] text = texts
    cdef const unsigned char[::1] bounds = memoryview(offsets).cast("B")  # (bytearray or array("q"))
    if bounds.shape[0] < 8 * (n + 1):
        raise ValueError("split_properties: fewer offsets than rows")
    cdef const int64_t* off = <const int64_t*>&bounds[0]
    cdef Py_ssize_t total = text.shape[0]
    if off[0] != 0 or off[n] > total or total > 0x7FFFFFFF:
        raise ValueError("split_properties: the offsets are not those of the sections")
    cdef const unsigned char* t = &text[0] if total else NULL
    cdef const unsigned char* p
    cdef const unsigned char* kv
    cdef Py_ssize_t segments = 0, row, a, b
    for row in range(n):
        a = off[row]
        b = off[row + 1]
        if a < 0 or b < a or b > total:
            raise ValueError("split_properties: the offsets are not those of the sections")
        if b > a:
            segments += 1
            while True:
                p = <const unsigned char*>memchr(t + a, 2, b - a)
                if p == NULL:
                    break
                segments += 1
                a = p - t + 1
    cdef bytearray map_offsets = _buffer(4 * (n + 1))
    cdef bytearray name_offsets = _buffer(4 * (segments + 1))
    cdef bytearray value_offsets = _buffer(4 * (segments + 1))
    cdef bytearray names = _buffer(total)
    cdef bytearray values = _buffer(total)
    cdef int32_t* mo = <int32_t*>PyByteArray_AS_STRING(map_offsets)
    cdef int32_t* no = <int32_t*>PyByteArray_AS_STRING(name_offsets)
    cdef int32_t* vo = <int32_t*>PyByteArray_AS_STRING(value_offsets)
    cdef char* nv = PyByteArray_AS_STRING(names)
    cdef char* vv = PyByteArray_AS_STRING(values)
    cdef Py_ssize_t nw = len(wanted), w, q, first, pair = 0, seg, end, name_len, value_len
    if nw > MAX_WANTED:
        raise ValueError(f"split_properties: at most {MAX_WANTED} names are looked up")
    cdef list found = []
    cdef bytes name
    cdef bytearray valid, at
    cdef const char* want[MAX_WANTED]
    cdef Py_ssize_t want_len[MAX_WANTED]
    cdef char* valid_bits[MAX_WANTED]
    cdef int32_t* pair_at[MAX_WANTED]
    for w in range(nw):
        name = <bytes>wanted[w]
        valid = _buffer((n + 7) // 8)
        at = _buffer(4 * n)
        memset(PyByteArray_AS_STRING(valid), 0, (n + 7) // 8)
        memset(PyByteArray_AS_STRING(at), 0, 4 * n)
        found.append((name, valid, at))
        want[w] = name
        want_len[w] = len(name)
        valid_bits[w] = PyByteArray_AS_STRING(valid)
        pair_at[w] = <int32_t*>PyByteArray_AS_STRING(at)
    no[0] = 0
    vo[0] = 0
    for row in range(n):
        mo[row] = <int32_t>pair
        a = off[row]
        b = off[row + 1]
        if a == b:
            continue
        first = pair
        seg = a
        while True:
            p = <const unsigned char*>memchr(t + seg, 2, b - seg) if b > seg else NULL
            end = b if p == NULL else p - t
            kv = <const unsigned char*>memchr(t + seg, 1, end - seg) if end > seg else NULL
            if kv == NULL:
                return None  # a segment without U+0001
            name_len = kv - t - seg
            value_len = end - (kv - t) - 1
            if name_len == 0 or value_len == 0:
                return None  # an empty name or value
            for q in range(first, pair):
                if no[q + 1] - no[q] == name_len and memcmp(nv + no[q], t + seg, name_len) == 0:
                    return None  # a name twice in the row
            memcpy(nv + no[pair], t + seg, name_len)
            memcpy(vv + vo[pair], kv + 1, value_len)
            no[pair + 1] = <int32_t>(no[pair] + name_len)
            vo[pair + 1] = <int32_t>(vo[pair] + value_len)
            for w in range(nw):
                if want_len[w] == name_len and memcmp(want[w], t + seg, name_len) == 0:
                    valid_bits[w][row >> 3] |= <char>(1 << (row & 7))
                    pair_at[w][row] = <int32_t>pair
            pair += 1
            if p == NULL:
                break
            seg = end + 1
    mo[n] = <int32_t>pair
    del names[no[pair]:]
    del values[vo[pair]:]
    return pair, map_offsets, name_offsets, names, value_offsets, values, [(v, at) for _name, v, at in found]
