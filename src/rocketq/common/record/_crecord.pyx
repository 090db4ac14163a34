# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled versions of the hot record functions of rocketq.common.record (properties, lazy, codec).

Built by setup.py when Cython and a C compiler are there; rocketq.common.record.accel picks it at
import time unless ROCKETQ_NO_EXTENSIONS=1. Every function gives exactly what its pure-Python twin
gives (the same values, the same RecordDecodeError cases): tests/unit/record runs both on the same inputs.
"""

from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy
from zlib import crc32 as zlib_crc32

from rocketq.common.record.layout import RecordDecodeError


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    void* PyUnicode_DATA(object o)

# What rocketq.common.record.accel expects: a module built from an older .pyx is not used.
API_VERSION = 10

cdef int32_t MESSAGE_MAGIC = -626843481  # layout.MESSAGE_MAGIC_CODE (0xDAA320A7)

cdef int MAX_TOPIC_BYTES = 127
cdef int SYSFLAG_POS = 36
cdef dict _TOPICS = {}
cdef Py_ssize_t _TOPICS_KEPT = 4096


cdef inline int32_t _i32(const uint8_t* p) noexcept:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3])


cdef inline int64_t _i64(const uint8_t* p) noexcept:
    return <int64_t>((<uint64_t>_u32(p) << 32) | <uint64_t>_u32(p + 4))


cdef inline unsigned int _u32(const uint8_t* p) noexcept:
    return (<unsigned int>p[0] << 24) | (<unsigned int>p[1] << 16) | (<unsigned int>p[2] << 8) | <unsigned int>p[3]


cdef inline int16_t _i16(const uint8_t* p) noexcept:
    return <int16_t>((<unsigned int>p[0] << 8) | <unsigned int>p[1])


def decode_properties(str text):
    """Java string2messageProperties: a segment counts only with >= 1 char each side of U+0001."""
    cdef dict props = {}
    _decode_into(text, props)
    return props


cdef Py_ssize_t _decode_into(str text, dict props) except -2:
    """decode_properties into `props`; the number of segments kept, or -1 when one was skipped."""
    cdef Py_ssize_t n = len(text)
    cdef Py_ssize_t i, seg = 0, kv = -1, kept = 0
    cdef bint skipped = False
    cdef Py_UCS4 c
    if n == 0:
        return 0
    for i in range(n):
        c = text[i]
        if c == 2:
            if kv > seg and i > kv + 1:
                props[text[seg:kv]] = text[kv + 1:i]
                kept += 1
            else:
                skipped = True
            seg = i + 1
            kv = -1
        elif c == 1 and kv < 0:
            kv = i
    if kv > seg and n > kv + 1:
        props[text[seg:kv]] = text[kv + 1:n]
        kept += 1
    else:
        skipped = True
    return -1 if skipped else kept


cdef bytes _ascii_cut(str text, Py_ssize_t cut_start, Py_ssize_t cut_end, str name, str value):
    """properties_for_store's bytes for ASCII strings (a character is a byte): one copy into the result."""
    cdef Py_ssize_t n = len(text), nn = len(name), nv = len(value), head, tail_at, size
    cdef const char* t = <const char*>PyUnicode_DATA(text)
    if cut_start < 0:
        head, tail_at = n, n
    elif cut_start == 0:
        head, tail_at = 0, (cut_end + 1 if cut_end < n else n)
    else:
        head, tail_at = cut_start - 1, cut_end
    size = head + (n - tail_at) + nn + 1 + nv
    if head + (n - tail_at) > 0:
        size += 1
    cdef bytes out = PyBytes_FromStringAndSize(NULL, size)
    cdef char* o = PyBytes_AS_STRING(out)
    memcpy(o, t, head)
    memcpy(o + head, t + tail_at, n - tail_at)
    o += head + (n - tail_at)
    if head + (n - tail_at) > 0:
        o[0] = 2
        o += 1
    memcpy(o, PyUnicode_DATA(name), nn)
    o[nn] = 1
    memcpy(o + nn + 1, PyUnicode_DATA(value), nv)
    return out


def properties_for_store(str text, str drop, str name, str value):
    """properties.properties_for_store: decode_properties(text) without `drop` and with name = value, and
    the UTF-8 of that dict's properties string cut from `text` (the `drop` segment taken out, the new
    entry appended) when the cut is exactly what encoding the dict gives, else None: a name twice, a
    segment the decode skips, two `drop` segments, `name` already there, text that does not encode."""
    cdef dict props = {}
    cdef Py_ssize_t n = len(text)
    cdef Py_ssize_t i, seg = 0, kv = -1, kept = 0, cut_start = -1, cut_end = -1
    cdef bint exact = True
    cdef Py_UCS4 c
    cdef str key, base
    if n == 0:
        props[name] = value
        exact = False
    else:
        for i in range(n + 1):
            if i < n:
                c = text[i]
                if c == 1:
                    if kv < 0:
                        kv = i
                    continue
                if c != 2:
                    continue
            if kv > seg and i > kv + 1:  # a segment decode keeps
                key = text[seg:kv]
                if key == drop:
                    if cut_start >= 0:
                        exact = False
                    cut_start = seg
                    cut_end = i
                else:
                    props[key] = text[kv + 1:i]
                    kept += 1
            else:
                exact = False
            seg = i + 1
            kv = -1
        if kept != len(props) or name in props:
            exact = False
        props[name] = value
    if not exact:
        return props, None
    if PyUnicode_IS_ASCII(text) and PyUnicode_IS_ASCII(name) and PyUnicode_IS_ASCII(value):
        return props, _ascii_cut(text, cut_start, cut_end, name, value)
    if cut_start < 0:
        base = text
    elif cut_start == 0:
        base = text[cut_end + 1:] if cut_end < n else ""
    else:
        base = text[:cut_start - 1] + text[cut_end:]
    try:
        if base:
            return props, (base + "\x02" + name + "\x01" + value).encode("utf-8")
        return props, (name + "\x01" + value).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: what the store's encode does with it is kept
        return props, None


cdef str _topic(const uint8_t* p, Py_ssize_t n):
    cdef bytes raw = PyBytes_FromStringAndSize(<const char*>p, n)
    topic = _TOPICS.get(raw)
    if topic is None:
        topic = raw.decode("utf-8")
        if len(_TOPICS) < _TOPICS_KEPT:
            _TOPICS[raw] = topic
    return <str>topic


def scan_record(buf, Py_ssize_t pos):
    """rocketq.common.record.lazy.scan_record, compiled: the same tuple, RecordDecodeError where it fails."""
    cdef const uint8_t[::1] view = buf
    cdef Py_ssize_t end = view.shape[0]
    if end == 0:
        raise RecordDecodeError(f"record at {pos}: truncated before its fixed fields")
    return _scan(&view[0], end, pos)


cdef tuple _scan(const uint8_t* b, Py_ssize_t end, Py_ssize_t pos):
    cdef const uint8_t* p
    cdef int32_t sys_flag, body_len, props_len
    cdef int born_len, store_len, topic_len
    cdef Py_ssize_t at, body_at, head
    if pos < 0 or pos + SYSFLAG_POS + 4 > end:
        raise RecordDecodeError(f"record at {pos}: truncated before its fixed fields")
    sys_flag = _i32(b + pos + SYSFLAG_POS)
    born_len = 16 if sys_flag & 0x10 else 4
    store_len = 16 if sys_flag & 0x20 else 4
    head = 48 + born_len + 4 + 8 + store_len + 4 + 4 + 8 + 4
    if pos + head > end:
        raise RecordDecodeError(f"record at {pos}: truncated before its fixed fields")
    p = b + pos
    body_len = _i32(p + head - 4)
    body_at = pos + head
    at = body_at + body_len
    if body_len < 0 or at > end:
        raise RecordDecodeError(f"record at {pos}: body length {body_len} runs past the buffer")
    if at >= end:
        raise RecordDecodeError(f"record at {pos}: truncated before its topic")
    topic_len = b[at]
    if topic_len > MAX_TOPIC_BYTES:
        raise RecordDecodeError(f"record at {pos}: negative topic length")
    at += 1
    if at + topic_len > end:
        raise RecordDecodeError(f"record at {pos}: topic runs past the buffer")
    try:
        topic = _topic(b + at, topic_len)
    except UnicodeDecodeError as exc:
        raise RecordDecodeError(f"record at {pos}: {exc}") from None
    at += topic_len
    if at + 2 > end:
        raise RecordDecodeError(f"record at {pos}: truncated before its properties length")
    props_len = _i16(b + at)
    at += 2
    if props_len > 0:
        if at + props_len > end:
            raise RecordDecodeError(f"record at {pos}: properties run past the buffer")
    else:
        props_len = 0
    cdef const uint8_t* q = p + 48 + born_len
    cdef const uint8_t* s = q + 4 + 8
    return (
        _i32(p), _i32(p + 8), _i32(p + 12), _i32(p + 16), _i64(p + 20), _i64(p + 28), sys_flag,
        _i64(p + 40), PyBytes_FromStringAndSize(<const char*>(p + 48), born_len), _i32(q),
        _i64(q + 4), PyBytes_FromStringAndSize(<const char*>s, store_len), _i32(s + store_len),
        _i32(s + store_len + 4), _i64(s + store_len + 8), body_at, body_len, topic, at, props_len,
        at + props_len,
    )


def decode_batch(body):
    """rocketq.common.record.codec.decode_batch, compiled: the same entries and the same errors."""
    return _decode_batch(body, None, None)


def decode_batch_for_store(body, dict batch_props):
    """rocketq.common.record.codec.decode_batch_for_store, compiled: the entries with `batch_props` merged
    into each one's properties, and each record's stored properties (encode_properties_bytes of the
    merged dict) cut from the entry's own bytes and the batch's encoded once; None for an entry where
    that would not be the same bytes (a name twice, a segment the decode skips, a batch name repeated)."""
    cdef list stored = []
    cdef list parts = []
    for key, value in batch_props.items():
        parts.append(key + "\x01" + value)
    try:
        suffix = "\x02".join(parts).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the store's encode does what it does with it
        return [(flag, entry_body, props | batch_props) for flag, entry_body, props in decode_batch(body)], None
    return _decode_batch(body, batch_props, stored, suffix), stored


cdef list _decode_batch(body, dict batch_props, list stored, bytes suffix=None):
    cdef const uint8_t[::1] view = body
    cdef Py_ssize_t end = view.shape[0]
    cdef Py_ssize_t pos = 0, p
    cdef const uint8_t* b
    cdef int32_t total, flag, body_len
    cdef int16_t props_len
    cdef list out = []
    cdef Py_ssize_t kept
    cdef bytes sep_suffix = (b"\x02" + suffix) if suffix else b""
    if end == 0:
        return out
    b = &view[0]
    while pos < end:
        if pos + 20 > end:
            raise RecordDecodeError(f"malformed batch entry at {pos}: unpack_from requires a buffer of at least {pos + 20} bytes for unpacking 20 bytes at offset {pos} (actual buffer size is {end})")
        total = _i32(b + pos)
        flag = _i32(b + pos + 12)
        body_len = _i32(b + pos + 16)
        p = pos + 20
        if body_len < 0 or p + body_len + 2 > end:
            raise RecordDecodeError(f"batch entry at {pos}: body length {body_len} runs past the body")
        entry_body = PyBytes_FromStringAndSize(<const char*>(b + p), body_len)
        p += body_len
        props_len = _i16(b + p)
        p += 2
        if props_len < 0 or p + props_len > end:
            raise RecordDecodeError(f"batch entry at {pos}: properties length {props_len} runs past the body")
        props = {}
        kept = 0
        if props_len:
            raw = PyBytes_FromStringAndSize(<const char*>(b + p), props_len)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RecordDecodeError(f"malformed batch entry at {pos}: {exc}") from None
            kept = _decode_into(text, props)
        if stored is not None:
            if kept < 0 or kept != len(props) or not batch_props.keys().isdisjoint(props):
                stored.append(None)
            elif props_len:
                stored.append(raw + sep_suffix if suffix else raw)
            else:
                stored.append(suffix)
            props.update(batch_props)  # props | batch_props: the entry's own first, a repeated name replaced
        p += props_len
        if total != p - pos:
            raise RecordDecodeError(f"batch entry at {pos}: TOTALSIZE {total} but its fields take {p - pos}")
        out.append((flag, entry_body, props))
        pos = p
    return out


cdef class DecodedOnFirstRead:
    """rocketq.common.record.lazy._DecodedOnFirstRead, compiled (a C-level descriptor: a read costs
    one slot load and one comparison once the field is decoded)."""

    cdef object get
    cdef object set
    cdef object decode
    cdef object unset

    def __init__(self, slot, decode, unset):
        self.get = slot.__get__
        self.set = slot.__set__
        self.decode = decode
        self.unset = unset

    def __get__(self, msg, owner):
        if msg is None:
            return self
        value = self.get(msg)
        if value is self.unset:
            value = self.decode(msg)
            self.set(msg, value)
        return value

    def __set__(self, msg, value):
        self.set(msg, value)


def decode_records_lazy(cls, unset, body):
    """rocketq.common.record.lazy._decode_records_lazy, compiled: the same views, stopping at the same record."""
    cdef list out = []
    if not body:
        return out
    cdef const uint8_t[::1] view = body
    cdef Py_ssize_t end = view.shape[0]
    cdef Py_ssize_t pos = 0
    cdef tuple f
    new = cls.__new__
    while pos < end:
        try:
            f = _scan(&view[0], end, pos)
        except RecordDecodeError:
            break
        msg = new(cls)
        msg.store_size = f[0]
        msg.body_crc = f[1]
        msg.queue_id = f[2]
        msg.flag = f[3]
        msg.queue_offset = f[4]
        msg.commit_log_offset = f[5]
        msg.sys_flag = f[6]
        msg.born_timestamp = f[7]
        msg.store_timestamp = f[10]
        msg.reconsume_times = f[13]
        msg.prepared_transaction_offset = f[14]
        msg.topic = f[17]
        msg._raw = (body, pos, f[15], f[16], f[18], f[19], f[8], f[9], f[11], f[12])
        msg.body = unset
        msg.properties = unset
        msg.born_host = unset
        msg.store_host = unset
        msg.offset_msg_id = unset
        msg.transaction_id = None
        msg.broker_name = ""
        out.append(msg)
        pos = f[20]
    return out


# The pure-Python decoders of rocketq.common.record.lazy: a compressed body, and any field that does
# not decode, go through them (the same value, the same RecordDecodeError naming the record).
cdef object _body_fallback = None
cdef object _properties_fallback = None


def set_fallbacks(body, properties):
    global _body_fallback, _properties_fallback
    _body_fallback = body
    _properties_fallback = properties


def lazy_body(msg):
    """rocketq.common.record.lazy._decode_body, compiled for a body stored as it is."""
    cdef tuple raw = msg._raw
    cdef Py_ssize_t at = raw[2], size = raw[3]
    if msg.sys_flag & 0x1 or size == 0:  # COMPRESSED_FLAG: inflate in Python
        return _body_fallback(msg)
    cdef const uint8_t[::1] view = raw[0]
    return PyBytes_FromStringAndSize(<const char*>&view[at], size)


def lazy_properties(msg):
    """rocketq.common.record.lazy._decode_properties, compiled."""
    cdef tuple raw = msg._raw
    cdef Py_ssize_t at = raw[4], size = raw[5]
    if size == 0:
        return {}
    cdef const uint8_t[::1] view = raw[0]
    try:
        text = PyUnicode_DecodeUTF8(<const char*>&view[at], size, NULL)
    except UnicodeDecodeError:
        return _properties_fallback(msg)  # raises the error naming the record
    return decode_properties(text)


def lazy_properties_later(msg):
    """rocketq.client.consumer.pulled._properties_with_later, compiled: a view's properties decoded
    (lazy_properties), then the name, value pairs of its `_later` tuple, when it has one, set in order.
    A consumer's listener that reads tags or keys pays this on its first read of each message."""
    cdef dict props = lazy_properties(msg)
    cdef tuple later
    try:
        later = msg._later
    except AttributeError:  # a view nothing was added to
        return props
    cdef Py_ssize_t i, n = len(later)
    for i in range(0, n - 1, 2):
        props[later[i]] = later[i + 1]
    return props


def java_string_hash(str text, prefix_hash=0):
    """rocketq.store.index_file.java_string_hash: Java's String.hashCode() of `text` (its UTF-16 code
    units) as an unsigned 32-bit value, continuing from the hash of a prefix. The index hashes a key
    or two of every stored message with it (the message's UNIQ_KEY at least)."""
    cdef uint32_t h = <uint32_t>(prefix_hash & 0xFFFFFFFF)
    cdef Py_UCS4 ch
    cdef uint32_t c
    for ch in text:
        c = <uint32_t>ch
        if c < 0xD800:
            h = h * 31 + c
        elif c < 0xE000:  # a lone surrogate: the pure function's UTF-16 encode refuses it
            return _java_string_hash_py(text, prefix_hash)
        elif c < 0x10000:
            h = h * 31 + c
        else:  # a surrogate pair, as Java stores it
            c -= 0x10000
            h = h * 31 + (0xD800 + (c >> 10))
            h = h * 31 + (0xDC00 + (c & 0x3FF))
    return h


cdef object _java_string_hash_py = None


def set_java_string_hash_fallback(fn):
    global _java_string_hash_py
    _java_string_hash_py = fn


cdef inline void _w32(uint8_t* p, uint32_t v) noexcept:
    p[0] = <uint8_t>(v >> 24)
    p[1] = <uint8_t>(v >> 16)
    p[2] = <uint8_t>(v >> 8)
    p[3] = <uint8_t>v


cdef inline void _w64(uint8_t* p, uint64_t v) noexcept:
    _w32(p, <uint32_t>(v >> 32))
    _w32(p + 4, <uint32_t>v)


cdef object _crc32 = zlib_crc32


cdef void _write_record(uint8_t* b, Py_ssize_t size, uint32_t crc, int32_t queue_id, int32_t flag,
                        int64_t queue_offset, int64_t phys, int32_t sys_flag, int64_t born_ts,
                        bytes born_ip, Py_ssize_t born_len, int32_t born_port, int64_t store_ts,
                        bytes store_ip, Py_ssize_t store_len, int32_t store_port, int32_t reconsume,
                        int64_t prepared_offset, bytes body, Py_ssize_t body_len, bytes topic_block,
                        Py_ssize_t topic_len, bytes prop, Py_ssize_t prop_len):
    """One record at `b` (the layout of rocketq.common.record.layout; the caller checked the room)."""
    _w32(b, <uint32_t>size)
    _w32(b + 4, <uint32_t>MESSAGE_MAGIC)
    _w32(b + 8, crc)
    _w32(b + 12, <uint32_t>queue_id)
    _w32(b + 16, <uint32_t>flag)
    _w64(b + 20, <uint64_t>queue_offset)
    _w64(b + 28, <uint64_t>phys)
    _w32(b + 36, <uint32_t>sys_flag)
    _w64(b + 40, <uint64_t>born_ts)
    b += 48
    memcpy(b, PyBytes_AS_STRING(born_ip), born_len)
    b += born_len
    _w32(b, <uint32_t>born_port)
    _w64(b + 4, <uint64_t>store_ts)
    b += 12
    memcpy(b, PyBytes_AS_STRING(store_ip), store_len)
    b += store_len
    _w32(b, <uint32_t>store_port)
    _w32(b + 4, <uint32_t>reconsume)
    _w64(b + 8, <uint64_t>prepared_offset)
    _w32(b + 16, <uint32_t>body_len)
    b += 20
    memcpy(b, PyBytes_AS_STRING(body), body_len)
    b += body_len
    memcpy(b, PyBytes_AS_STRING(topic_block), topic_len)
    b += topic_len
    b[0] = <uint8_t>(prop_len >> 8)
    b[1] = <uint8_t>prop_len
    memcpy(b + 2, PyBytes_AS_STRING(prop), prop_len)


def pack_batch_into(buf, Py_ssize_t pos, list entries, bytes topic_block, list props, list sizes,
                    int32_t queue_id, int64_t queue_offset, int64_t phys, int32_t sys_flag, int64_t born_ts,
                    bytes born_ip, int32_t born_port, int64_t store_ts, bytes store_ip, int32_t store_port,
                    int32_t reconsume):
    """rocketq.common.record.codec.pack_batch_into, compiled: the same bytes written at the same places."""
    cdef uint8_t[::1] view = buf
    cdef uint8_t* b
    cdef Py_ssize_t n = len(entries), i, size, body_len, prop_len
    cdef Py_ssize_t topic_len = len(topic_block)
    cdef Py_ssize_t born_len = len(born_ip), store_len = len(store_ip)
    cdef Py_ssize_t head = 80 + born_len + store_len  # TOTALSIZE .. BODYLEN
    cdef bytes body, prop
    if len(props) != n or len(sizes) != n:
        raise ValueError("pack_batch_into: entries, props and sizes differ in length")
    if view.shape[0] == 0:
        return
    b = &view[0]
    for i in range(n):
        body = entries[i][1]
        prop = props[i]
        size = sizes[i]
        body_len = len(body)
        prop_len = len(prop)
        if pos < 0 or size != head + body_len + topic_len + 2 + prop_len or pos + size > view.shape[0]:
            raise ValueError(f"pack_batch_into: entry {i} of {size} bytes does not fit at {pos}")
        _write_record(
            b + pos, size, <uint32_t>(_crc32(body) & 0x7FFFFFFF), queue_id, <int32_t>entries[i][0], queue_offset,
            phys, sys_flag, born_ts, born_ip, born_len, born_port, store_ts, store_ip, store_len, store_port,
            reconsume, 0, body, body_len, topic_block, topic_len, prop, prop_len,
        )
        pos += size
        phys += size
        queue_offset += 1


cdef object _pack_record_py = None


def set_pack_record_fallback(fn):
    """The pure pack_record_into, for a body that is not bytes."""
    global _pack_record_py
    _pack_record_py = fn


def pack_record_into(buf, Py_ssize_t pos, Py_ssize_t size, body, bytes topic_block, bytes props,
                     int32_t queue_id, int32_t flag, int64_t queue_offset, int64_t phys, int32_t sys_flag,
                     int64_t born_ts, bytes born_ip, int32_t born_port, int64_t store_ts, bytes store_ip,
                     int32_t store_port, int32_t reconsume, int64_t prepared_offset):
    """rocketq.common.record.codec.pack_record_into, compiled: the same bytes written at the same places."""
    if type(body) is not bytes:
        _pack_record_py(buf, pos, size, body, topic_block, props, queue_id, flag, queue_offset, phys,
                        sys_flag, born_ts, born_ip, born_port, store_ts, store_ip, store_port, reconsume,
                        prepared_offset)
        return
    cdef Py_ssize_t body_len = len(body), prop_len = len(props), topic_len = len(topic_block)
    cdef Py_ssize_t born_len = len(born_ip), store_len = len(store_ip)
    cdef Py_buffer view
    if (born_len != 4 and born_len != 16) or (store_len != 4 and store_len != 16):
        raise ValueError("pack_record_into: a host is 4 or 16 bytes")
    if size != 80 + born_len + store_len + body_len + topic_len + 2 + prop_len or prop_len > 0xFFFF:
        raise ValueError(f"pack_record_into: a record of {size} bytes does not match its fields")
    crc = _crc32(body) & 0x7FFFFFFF
    PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE)
    try:
        if pos < 0 or pos + size > view.len:
            raise ValueError(f"pack_record_into: a record of {size} bytes does not fit at {pos}")
        _write_record(
            <uint8_t*>view.buf + pos, size, <uint32_t>crc, queue_id, flag, queue_offset, phys, sys_flag,
            born_ts, born_ip, born_len, born_port, store_ts, store_ip, store_len, store_port, reconsume,
            prepared_offset, body, body_len, topic_block, topic_len, props, prop_len,
        )
    finally:
        PyBuffer_Release(&view)


def index_put_entries(buf, list entries, Py_ssize_t start, Py_ssize_t stop, int32_t count, Py_ssize_t entry_at,
                      int64_t slot_num, int64_t begin_ts, int64_t begin_phy):
    """rocketq.store.index_file.put_entries_py, compiled: the same entries and slots written, the same
    (count, new slots, begin offset, begin timestamp) returned."""
    cdef Py_buffer view
    cdef Py_ssize_t i, slot_pos
    cdef int64_t key_hash, phy, ts, time_diff, new_slots = 0
    cdef int32_t slot_value
    cdef uint8_t* b
    cdef tuple entry
    if slot_num <= 0 or stop > len(entries) or start < 0:
        raise ValueError("index_put_entries: bad arguments")
    PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE)
    try:
        if entry_at < 0 or entry_at + (stop - start) * 20 > view.len or 40 + slot_num * 4 > view.len:
            raise ValueError("index_put_entries: the entries do not fit the mapping")
        b = <uint8_t*>view.buf
        for i in range(start, stop):
            entry = entries[i]
            key_hash = entry[0]
            phy = entry[1]
            ts = entry[2]
            if key_hash < 0 or key_hash > 0x7FFFFFFF:
                raise ValueError(f"index_put_entries: key hash {key_hash} is not a non-negative int32")
            slot_pos = 40 + (key_hash % slot_num) * 4
            slot_value = _i32(b + slot_pos)
            if slot_value <= 0 or slot_value > count:
                slot_value = 0
                new_slots += 1
            time_diff = (ts - begin_ts) // 1000 if ts > begin_ts > 0 else 0
            if time_diff > 0x7FFFFFFF:
                time_diff = 0x7FFFFFFF
            _w32(b + entry_at, <uint32_t>key_hash)
            _w64(b + entry_at + 4, <uint64_t>phy)
            _w32(b + entry_at + 12, <uint32_t>time_diff)
            _w32(b + entry_at + 16, <uint32_t>slot_value)
            _w32(b + slot_pos, <uint32_t>count)
            if count <= 1:
                begin_phy = phy
                begin_ts = ts
            count += 1
            entry_at += 20
    finally:
        PyBuffer_Release(&view)
    return count, new_slots, begin_phy, begin_ts



cdef const char* _HEX = b"0123456789ABCDEF"


def offset_msg_ids(str prefix, list offsets):
    """rocketq.common.record.codec.offset_msg_ids_py, compiled: the hex digits written straight into the
    result (no %-format per record)."""
    cdef Py_ssize_t n = len(offsets), np = len(prefix), i, j, at = 0
    cdef int64_t offset
    cdef uint64_t v
    cdef bytes out
    cdef char* o
    if n == 0:
        return ""
    if not PyUnicode_IS_ASCII(prefix):
        return ",".join([prefix + "%016X" % offset for offset in offsets])
    out = PyBytes_FromStringAndSize(NULL, n * (np + 17) - 1)
    o = PyBytes_AS_STRING(out)
    for i in range(n):
        offset = offsets[i]
        if offset < 0:  # never a commit-log offset; as the format writes it
            return ",".join([prefix + "%016X" % offset for offset in offsets])
        v = <uint64_t>offset
        if i:
            o[at] = 44  # ","
            at += 1
        memcpy(o + at, PyUnicode_DATA(prefix), np)
        at += np
        for j in range(15, -1, -1):
            o[at + j] = _HEX[v & 15]
            v >>= 4
        at += 16
    return out.decode("ascii")
