# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of the msgpack header codec (header_msgpack.py), the header of every request and
answer between our SDK and our broker. Built by setup.py when Cython and a C compiler are there; picked
by header_msgpack.py at import time unless ROCKETQ_NO_EXTENSIONS=1.

It reads and writes the msgpack subset those headers use (a map of short str keys to ints and strs,
extFields a map of str to str) straight from and into the frame's bytes, without the intermediate dict
of msgpack.unpackb / Packer.pack and the Python-level checks of every entry. Anything outside that
subset (other value types, ints past 32 bits, a torn or invalid header, non-str extFields values,
strings that do not encode) is handed to the pure-Python function, so the result, or the error, is
always exactly the pure path's: tests/unit/remoting/test_header_accelerator.py compares both.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_Next, PyDict_SetItem
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcmp, memcpy

API_VERSION = 5

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL
    long long PyLong_AsLongLongAndOverflow(object v, int* overflow) except? -1
    int PyUnicode_IS_ASCII(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    void* PyUnicode_DATA(object text)

# Set by configure(): the pure functions (the fallback), the command class and the enum tables.
cdef object _pure_encode = None
cdef object _pure_decode = None
cdef object _command = None
cdef SlotBuilder _command_builder = None  # RemotingCommand without its Python __init__, when it qualifies
cdef object _languages_get = None
cdef object _other = None
cdef object _msgpack_type = None
cdef object _EMPTY = b""
cdef int _MSGPACK_TAG = 0x4D  # SerializeType.MSGPACK, the frame's serialize type byte
# RemotingCommand's fields in order (SlotBuilder offsets are in this order).
cdef tuple _COMMAND_FIELDS = ("code", "language", "version", "opaque", "flag", "remark", "ext_fields", "body", "serialize_type", "header_length")


def configure(pure_encode, pure_decode, command, languages, other, msgpack_type):
    global _pure_encode, _pure_decode, _command, _languages_get, _other, _msgpack_type
    global _command_builder
    _pure_encode, _pure_decode, _command = pure_encode, pure_decode, command
    _languages_get, _other, _msgpack_type = languages.get, other, msgpack_type
    _command_builder = slot_builder(command)


# -- instances of slotted dataclasses without their Python __init__ -------------------------------------
cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        const char* name
        int type
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    object PyType_GenericAlloc(type t, Py_ssize_t n)

cdef extern from "structmember.h":
    int T_OBJECT_EX

cdef enum:
    MAX_SLOTS = 16


cdef class SlotBuilder:
    """`builder(*values)`: an instance of a slotted dataclass with every field given, in field order, exactly
    what `cls(*values)` makes, without running the generated Python `__init__` (about half a microsecond
    for the ten fields of a RemotingCommand): the object is allocated as object.__new__ does and each value
    stored in its slot. Only made by slot_builder() for classes whose __init__ does nothing else."""

    cdef type cls
    cdef Py_ssize_t n
    cdef Py_ssize_t offsets[MAX_SLOTS]

    cdef object fill(self, tuple values):
        cdef Py_ssize_t i
        cdef PyObject* value
        obj = PyType_GenericAlloc(self.cls, 0)  # zeroed slots, tracked by the GC as object.__new__'s
        cdef char* base = <char*><PyObject*>obj
        for i in range(self.n):
            value = <PyObject*>values[i]
            Py_INCREF(<object>value)
            (<PyObject**>(base + self.offsets[i]))[0] = value
        return obj

    def __call__(self, *values):
        if len(values) != self.n:
            raise TypeError(f"{self.cls.__name__} builder takes {self.n} values, got {len(values)}")
        return self.fill(values)


def slot_builder(cls):
    """A SlotBuilder for the dataclass `cls`, or None when `cls` is not one it can build exactly: a direct
    subclass of object with __slots__ holding exactly its fields (object slots), no __post_init__, no
    custom __new__, every field an __init__ argument (frozen classes qualify: their __init__ stores each field
    through object.__setattr__, as the builder stores it). A default factory does not matter: the builder
    takes every field, so __init__ would not call it either."""
    import dataclasses
    import types

    if type(cls) is not type or cls.__bases__ != (object,) or cls.__new__ is not object.__new__:
        return None
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        return None
    names = [f.name for f in dataclasses.fields(cls)]
    if tuple(cls.__dict__.get("__slots__", ())) != tuple(names) or not 0 < len(names) <= MAX_SLOTS:
        return None
    if any(not f.init for f in dataclasses.fields(cls)):
        return None
    cdef SlotBuilder builder = SlotBuilder.__new__(SlotBuilder)
    builder.cls = cls
    builder.n = len(names)
    cdef PyMemberDescrObject* descr
    for i, name in enumerate(names):
        member = cls.__dict__.get(name)
        if type(member) is not types.MemberDescriptorType:
            return None
        descr = <PyMemberDescrObject*><PyObject*>member
        if descr.d_member.type != T_OBJECT_EX:
            return None
        builder.offsets[i] = descr.d_member.offset
    return builder


class _Fallback(Exception):
    """Outside the compiled subset: the pure function decides."""


# -- decode ------------------------------------------------------------------------------------------
cdef struct Reader:
    const uint8_t* p
    Py_ssize_t pos
    Py_ssize_t end


cdef inline int _need(Reader* r, Py_ssize_t n) except -1:
    if r.end - r.pos < n:
        raise _Fallback()
    return 0


cdef inline uint64_t _be(Reader* r, int n) except? 0:
    cdef uint64_t v = 0
    cdef int i
    _need(r, n)
    for i in range(n):
        v = (v << 8) | r.p[r.pos + i]
    r.pos += n
    return v


cdef Py_ssize_t _map_len(Reader* r) except -1:
    _need(r, 1)
    cdef uint8_t b = r.p[r.pos]
    r.pos += 1
    if 0x80 <= b <= 0x8F:
        return b & 0x0F
    if b == 0xDE:
        return <Py_ssize_t>_be(r, 2)
    if b == 0xDF:
        return <Py_ssize_t>_be(r, 4)
    raise _Fallback()


cdef enum:
    CACHED_MAX = 24  # the longest str the decoder keeps (ext keys are short; msg ids are 32 chars)
    CACHE_SLOTS = 256  # a power of 2

cdef PyObject* _strings[CACHE_SLOTS]  # ASCII strs by a hash of their bytes; NULL: empty (static: zeroed)


cdef object _str(Reader* r):
    """A msgpack str (fixstr, str8/16/32) as a Python str; anything else is outside the subset."""
    _need(r, 1)
    cdef uint8_t b = r.p[r.pos]
    cdef Py_ssize_t n
    r.pos += 1
    if 0xA0 <= b <= 0xBF:
        n = b & 0x1F
    elif b == 0xD9:
        n = <Py_ssize_t>_be(r, 1)
    elif b == 0xDA:
        n = <Py_ssize_t>_be(r, 2)
    elif b == 0xDB:
        n = <Py_ssize_t>_be(r, 4)
    else:
        raise _Fallback()
    _need(r, n)
    cdef const uint8_t* s = r.p + r.pos
    cdef Py_ssize_t slot = -1
    cdef PyObject* known
    if 0 < n <= CACHED_MAX:
        # Keys and the short values that repeat (names, flags, "DefaultRegion") come back from the cache
        # instead of a new str each: the same text, so the same value to every reader.
        slot = (n * 31 + s[0] * 7 + s[n - 1] * 3 + s[n >> 1]) & (CACHE_SLOTS - 1)
        known = _strings[slot]
        if known is not NULL and PyUnicode_GET_LENGTH(<object>known) == n and memcmp(PyUnicode_DATA(<object>known), s, n) == 0:
            r.pos += n
            return <object>known
    try:
        text = PyUnicode_DecodeUTF8(<const char*>s, n, NULL)
    except UnicodeDecodeError:
        raise _Fallback()
    r.pos += n
    if slot >= 0 and PyUnicode_IS_ASCII(text):  # ASCII: its length in chars is n, its data the n bytes
        Py_XDECREF(_strings[slot])
        Py_INCREF(text)
        _strings[slot] = <PyObject*>text
    return text


cdef object _value(Reader* r):
    """An int or a str; other types go to the pure path."""
    _need(r, 1)
    cdef uint8_t b = r.p[r.pos]
    if b <= 0x7F:
        r.pos += 1
        return <long>b
    if b >= 0xE0:
        r.pos += 1
        return <long>(<signed char>b)
    if (0xA0 <= b <= 0xBF) or 0xD9 <= b <= 0xDB:
        return _str(r)
    r.pos += 1
    if b == 0xCC:
        return <long>_be(r, 1)
    if b == 0xCD:
        return <long>_be(r, 2)
    if b == 0xCE:
        return <long long>_be(r, 4)
    if b == 0xCF:
        return _be(r, 8)
    if b == 0xD0:
        return <long>(<signed char>_be(r, 1))
    if b == 0xD1:
        return <long>(<short>_be(r, 2))
    if b == 0xD2:
        return <long>(<int>_be(r, 4))
    if b == 0xD3:
        return <long long>(<int64_t>_be(r, 8))
    raise _Fallback()


cdef object _decode(const uint8_t* p, Py_ssize_t n, object body):
    cdef Reader r
    r.p, r.pos, r.end = p, 0, n
    cdef Py_ssize_t count = _map_len(&r), i, j, ext_count
    code = None
    language = version = opaque = flag = 0
    remark = ext = None
    for i in range(count):
        key = _str(&r)
        if key == "x":
            ext_count = _map_len(&r)
            ext = {}
            for j in range(ext_count):
                k = _str(&r)
                PyDict_SetItem(ext, k, _str(&r))
            continue
        value = _value(&r)
        if key == "c":
            code = value
        elif key == "l":
            language = value
        elif key == "v":
            version = value
        elif key == "o":
            opaque = value
        elif key == "f":
            flag = value
        elif key == "r":
            remark = value
        # other keys: ignored, as the pure path's map lookups ignore them
    if r.pos != n:  # trailing bytes: unpackb's ExtraData
        raise _Fallback()
    if (
        type(code) is not int or type(language) is not int or type(version) is not int
        or type(opaque) is not int or type(flag) is not int
        or (remark is not None and type(remark) is not str)
    ):
        raise _Fallback()
    values = (code, _languages_get(language, _other), version, opaque, flag, remark, ext, body, _msgpack_type, n)
    if _command_builder is not None:
        return _command_builder.fill(values)
    return _command(*values)


def decode(data):
    """MsgpackHeaderCodec.decode: a RemotingCommand, or HeaderDecodeError (from the pure path)."""
    cdef Py_buffer view
    try:
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    except Exception:  # not a contiguous buffer: the pure path says what is wrong
        return _pure_decode(data)
    try:
        return _decode(<const uint8_t*>view.buf, view.len, _EMPTY)
    except _Fallback:
        pass
    finally:
        PyBuffer_Release(&view)
    return _pure_decode(data)


def cut_frames(data, Py_ssize_t pos, Py_ssize_t limit, list out):
    """FrameDecoder._cut's loop over msgpack frames: the complete frames of `data` from `pos` on, while each is
    msgpack-headed and within the subset _decode reads, decoded with its body (a copy) and appended to
    `out`; returns where it stopped. The pure loop goes on from there, one frame (another serialize type,
    an incomplete frame, one whose lengths or header are wrong: it raises the errors), then here again."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    cdef const uint8_t* p = <const uint8_t*>view.buf
    cdef Py_ssize_t end = view.len, length, header_length, start
    cdef uint64_t tag
    try:
        while end - pos >= 8:
            length = <Py_ssize_t>((<uint64_t>p[pos] << 24) | (p[pos + 1] << 16) | (p[pos + 2] << 8) | p[pos + 3])
            if length < 4 or length > limit or end - pos - 4 < length:
                break
            tag = (<uint64_t>p[pos + 4] << 24) | (p[pos + 5] << 16) | (p[pos + 6] << 8) | p[pos + 7]
            header_length = <Py_ssize_t>(tag & 0xFFFFFF)
            if (tag >> 24) != _MSGPACK_TAG or header_length > length - 4:
                break
            start = pos + 8
            body = PyBytes_FromStringAndSize(<const char*>p + start + header_length, length - 4 - header_length)
            try:
                cmd = _decode(p + start, header_length, body)
            except _Fallback:
                break
            out.append(cmd)
            pos += 4 + length
    finally:
        PyBuffer_Release(&view)
    return pos


# -- encode ------------------------------------------------------------------------------------------
cdef inline Py_ssize_t _int_size(long long v):
    if 0 <= v < 0x80 or -32 <= v < 0:
        return 1
    if -0x80 <= v < 0x100:
        return 2
    if -0x8000 <= v < 0x10000:
        return 3
    return 5


cdef inline Py_ssize_t _str_size(Py_ssize_t n):
    if n < 32:
        return 1 + n
    if n < 0x100:
        return 2 + n
    if n < 0x10000:
        return 3 + n
    return 5 + n


cdef inline Py_ssize_t _map_size(Py_ssize_t n):
    return 1 if n < 16 else (3 if n < 0x10000 else 5)


cdef inline uint8_t* _put_be(uint8_t* out, uint64_t v, int n):
    cdef int i
    for i in range(n - 1, -1, -1):
        out[i] = v & 0xFF
        v >>= 8
    return out + n


cdef inline uint8_t* _put_int(uint8_t* out, long long v):
    # msgpack's smallest form, as its Packer writes it (positive: fixint, uint8/16/32; negative:
    # negative fixint, int8/16/32); _encode only lets ints of the 32-bit range through.
    if v >= 0:
        if v < 0x80:
            out[0] = <uint8_t>v
            return out + 1
        if v < 0x100:
            out[0] = 0xCC
            return _put_be(out + 1, v, 1)
        if v < 0x10000:
            out[0] = 0xCD
            return _put_be(out + 1, v, 2)
        out[0] = 0xCE
        return _put_be(out + 1, v, 4)
    if v >= -32:
        out[0] = <uint8_t>(v & 0xFF)
        return out + 1
    if v >= -0x80:
        out[0] = 0xD0
        return _put_be(out + 1, <uint64_t>v, 1)
    if v >= -0x8000:
        out[0] = 0xD1
        return _put_be(out + 1, <uint64_t>v, 2)
    out[0] = 0xD2
    return _put_be(out + 1, <uint64_t>v, 4)


cdef inline uint8_t* _put_str(uint8_t* out, const char* s, Py_ssize_t n):
    if n < 32:
        out[0] = 0xA0 | n
        out += 1
    elif n < 0x100:
        out[0] = 0xD9
        out = _put_be(out + 1, n, 1)
    elif n < 0x10000:
        out[0] = 0xDA
        out = _put_be(out + 1, n, 2)
    else:
        out[0] = 0xDB
        out = _put_be(out + 1, n, 4)
    memcpy(out, s, n)
    return out + n


cdef inline uint8_t* _put_map(uint8_t* out, Py_ssize_t n):
    if n < 16:
        out[0] = 0x80 | n
        return out + 1
    if n < 0x10000:
        out[0] = 0xDE
        return _put_be(out + 1, n, 2)
    out[0] = 0xDF
    return _put_be(out + 1, n, 4)


cdef inline long long _small_int(object v) except? -1:
    # bool is an int the Packer writes as true/false: the pure path's business.
    if type(v) is not int and (not isinstance(v, int) or type(v) is bool):
        raise _Fallback()
    cdef int overflow = 0
    cdef long long x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow or not (-0x80000000 <= x < 0x100000000):
        raise _Fallback()
    return x


cdef inline object _field(object cmd, Py_ssize_t i):
    """Field i of a RemotingCommand (slot offsets from its SlotBuilder: no attribute lookup), or of
    anything else that has the fields, by name."""
    cdef PyObject* value
    if type(cmd) is _command and _command_builder is not None:
        value = (<PyObject**>((<char*><PyObject*>cmd) + _command_builder.offsets[i]))[0]
        if value is not NULL:
            return <object>value
    return getattr(cmd, _COMMAND_FIELDS[i])  # a deleted slot: AttributeError, as the pure path's


cdef object _encode(cmd, bint frame):
    """The header; with `frame`, the whole frame: length, serialize type and header length, header, body."""
    cdef long long ints[5]
    cdef int i
    for i in range(5):  # code, language, version, opaque, flag
        ints[i] = _small_int(_field(cmd, i))
    remark = _field(cmd, 5)
    ext = _field(cmd, 6)
    cdef Py_ssize_t size = 1 + 5 * 2, n, pos = 0, remark_n = 0, entries = 0, body_n = 0
    cdef Py_buffer body
    cdef bint has_body = False
    cdef const char* remark_s = NULL
    cdef const char* s
    cdef PyObject* k
    cdef PyObject* v
    for i in range(5):
        size += _int_size(ints[i])
    if remark is not None:
        if type(remark) is not str:
            raise _Fallback()
        remark_s = PyUnicode_AsUTF8AndSize(remark, &remark_n)
        size += 2 + _str_size(remark_n)
    if ext is not None:
        if not isinstance(ext, dict):
            raise _Fallback()
        entries = len(ext)
        size += 2 + _map_size(entries)
        while PyDict_Next(ext, &pos, &k, &v):
            if type(<object>k) is not str or type(<object>v) is not str:
                raise _Fallback()
            PyUnicode_AsUTF8AndSize(<object>k, &n)
            size += _str_size(n)
            PyUnicode_AsUTF8AndSize(<object>v, &n)
            size += _str_size(n)
    if not frame:
        out_obj = PyBytes_FromStringAndSize(NULL, size)
        return _write(cmd, <uint8_t*>PyBytes_AS_STRING(out_obj), ints, remark, remark_s, remark_n, ext, entries, out_obj)
    if size > 0xFFFFFF:  # the header length's 3 bytes
        raise _Fallback()
    body_obj = _field(cmd, 7)
    if body_obj:  # as encode_frame's `if body`
        try:
            PyObject_GetBuffer(body_obj, &body, PyBUF_SIMPLE)
        except Exception:  # not a contiguous buffer: the pure path says what is wrong
            raise _Fallback()
        has_body = True
        body_n = body.len
    try:
        if 4 + size + body_n > 0x7FFFFFFF:
            raise _Fallback()
        out_obj = PyBytes_FromStringAndSize(NULL, 8 + size + body_n)
        out = <uint8_t*>PyBytes_AS_STRING(out_obj)
        _put_be(out, 4 + size + body_n, 4)
        _put_be(out + 4, (<uint64_t>_MSGPACK_TAG << 24) | <uint64_t>size, 4)
        _write(cmd, out + 8, ints, remark, remark_s, remark_n, ext, entries, out_obj)
        if body_n:
            memcpy(out + 8 + size, body.buf, body_n)
    finally:
        if has_body:
            PyBuffer_Release(&body)
    return out_obj


cdef object _write(cmd, uint8_t* out, long long* ints, remark, const char* remark_s, Py_ssize_t remark_n,
                   ext, Py_ssize_t entries, out_obj):
    cdef Py_ssize_t n, pos = 0
    cdef const char* s
    cdef PyObject* k
    cdef PyObject* v
    cdef int i
    out = _put_map(out, 5 + (remark is not None) + (ext is not None))
    cdef const char* names = b"clvof"
    for i in range(5):
        out = _put_str(out, names + i, 1)
        out = _put_int(out, ints[i])
    if remark is not None:
        out = _put_str(out, b"r", 1)
        out = _put_str(out, remark_s, remark_n)
    if ext is not None:
        out = _put_str(out, b"x", 1)
        out = _put_map(out, entries)
        while PyDict_Next(ext, &pos, &k, &v):
            s = PyUnicode_AsUTF8AndSize(<object>k, &n)
            out = _put_str(out, s, n)
            s = PyUnicode_AsUTF8AndSize(<object>v, &n)
            out = _put_str(out, s, n)
    return out_obj


def encode(cmd):
    """MsgpackHeaderCodec.encode: the header bytes, exactly what msgpack's Packer writes for the map."""
    try:
        return _encode(cmd, False)
    except (_Fallback, UnicodeEncodeError):
        return _pure_encode(cmd)


def encode_frame(cmd):
    """The whole frame of a command with a msgpack header (frame.encode_frame's bytes: length, type and
    header length, header, body) in one buffer; None when the header is outside the compiled subset
    (frame.encode_frame then builds it with the pure encoder)."""
    try:
        return _encode(cmd, True)
    except (_Fallback, UnicodeEncodeError):
        return None


# -- typed header fields ---------------------------------------------------------------------------------
cdef extern from "Python.h":
    PyObject* PyDict_GetItemWithError(object d, object key) except? NULL

cdef int _STR = 0, _INT = 1, _BOOL = 2


cdef class FieldDecoder:
    """A typed header's decoder for a hot path (CommandHeader.compile_decoder_into): `build(*picked values)`
    from the extFields when every field is in its common form (present when required; numbers plain ASCII
    digits short enough to be in range; booleans ASCII), else the pure decoder decides (and raises the
    error naming the field). The values are exactly what the pure decoder gives for such fields."""

    cdef tuple keys
    cdef tuple kinds
    cdef tuple digits
    cdef tuple required
    cdef tuple defaults
    cdef tuple pick
    cdef object build
    cdef object fallback
    cdef bint named

    def __init__(self, fields, pick, build, fallback):
        # fields: every field of the header, in its order (all are checked, as the pure decoder does);
        # pick: the indexes of the values handed to build.
        self.keys = tuple(f[0] for f in fields)
        self.kinds = tuple({"str": _STR, "bool": _BOOL}.get(f[1], _INT) for f in fields)
        self.digits = tuple(f[2] for f in fields)
        self.required = tuple(f[3] for f in fields)
        self.defaults = tuple(f[4] for f in fields)
        self.pick = tuple(pick)
        self.build = build
        self.fallback = fallback
        # A NamedTuple class: its __new__ is a Python function that only calls tuple.__new__(cls, values),
        # which is called here directly (the same object, one Python frame less per decode).
        self.named = (
            isinstance(build, type) and issubclass(build, tuple) and len(getattr(build, "_fields", ())) == len(pick)
        )

    def __call__(self, ext):
        if ext is None or not isinstance(ext, dict):
            return self.fallback(ext)
        cdef Py_ssize_t i, j, n = len(self.keys), length
        cdef PyObject* raw
        cdef int kind
        cdef long long number
        cdef const char* chars
        values = [None] * n
        for i in range(n):
            raw = PyDict_GetItemWithError(ext, self.keys[i])
            if raw is NULL or <object>raw is None:  # ext.get(key) is None: absent
                if self.required[i]:
                    return self.fallback(ext)
                values[i] = self.defaults[i]
                continue
            value = <object>raw
            kind = self.kinds[i]
            if kind == _STR:
                values[i] = value
                continue
            if type(value) is not str or not PyUnicode_IS_ASCII(value):
                return self.fallback(ext)
            length = PyUnicode_GET_LENGTH(value)
            chars = <const char*>PyUnicode_DATA(value)
            if kind == _BOOL:  # str.lower() == "true", for ASCII text
                values[i] = length == 4 and (chars[0] | 0x20) == 116 and (chars[1] | 0x20) == 114 and (chars[2] | 0x20) == 117 and (chars[3] | 0x20) == 101
                continue
            if length == 0 or length > <Py_ssize_t>self.digits[i]:
                return self.fallback(ext)
            number = 0
            for j in range(length):
                if not (48 <= chars[j] <= 57):
                    return self.fallback(ext)
                number = number * 10 + (chars[j] - 48)
            values[i] = number
        picked = [values[k] for k in self.pick]
        if self.build is tuple:  # the values themselves (compile_decoder_into's `tuple`)
            return tuple(picked)
        if self.named:
            return tuple.__new__(self.build, picked)
        return self.build(*picked)
