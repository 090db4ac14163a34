# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of the request signature's hot part (signing.py): the HMAC-SHA1 over the signed values
of a request of a known key set (their UTF-8, in key order) and its body, and the check of the
request's Signature against its Base64. Built by setup.py when Cython, a C compiler and OpenSSL's
headers are there; picked by signing.py at import time unless ROCKETQ_NO_EXTENSIONS=1.

No crypto of our own: SHA-1 is OpenSSL's (SHA1_Update, the same libcrypto and the same assembly
hashlib's sha1 runs), the HMAC is RFC 2104's two keyed SHA-1 states, built once per secret key as
signing.py builds them; Base64 is OpenSSL's EVP_EncodeBlock and the compare its CRYPTO_memcmp
(constant time, as hmac.compare_digest). What this saves against hashlib is not the hashing but what
surrounds it: a keyed state is a plain SHA_CTX copied on the stack, where hashlib's copy allocates an
EVP_MD_CTX and OpenSSL 3 duplicates the provider's context (four allocations and two frees per HMAC),
plus a Python object per copy and per digest; and the values go into SHA-1 from the strings' own UTF-8
without being joined into a bytes object (docs/security.md, "The ACL step alone").

Anything outside what it handles (a key missing or extra, a value that is not a str or does not encode
as UTF-8, a dict subclass with reads of its own, a Signature that is not an ASCII str) returns None, and signing.py decides
the pure way, so the result is always the pure path's: tests/unit/acl/test_signing.py compares both.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_Check, PyDict_Contains, PyDict_Next, PyDict_SetItem, PyDict_Size
from cpython.exc cimport PyErr_Clear
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport Py_EQ, PyObject, PyObject_RichCompareBool
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_Check, PyUnicode_CheckExact
from libc.string cimport memcmp, memcpy

API_VERSION = 6

cdef extern from "openssl/sha.h":
    ctypedef struct SHA_CTX:
        pass
    int SHA1_Init(SHA_CTX* ctx)
    int SHA1_Update(SHA_CTX* ctx, const void* data, size_t size)
    int SHA1_Final(unsigned char* digest, SHA_CTX* ctx)

cdef extern from "openssl/evp.h":
    int EVP_EncodeBlock(unsigned char* out, const unsigned char* data, int size)

cdef extern from "openssl/crypto.h":
    int CRYPTO_memcmp(const void* a, const void* b, size_t size)

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size)
    bint PyUnicode_IS_COMPACT_ASCII(object text)
    const void* PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    int PyUnicode_KIND(object text)
    bint PyUnicode_IS_READY(object text)
    object PyUnicode_DecodeASCII(const char* data, Py_ssize_t size, const char* errors)
    # not cpython.buffer's (which raises): a body that is not a buffer goes to the pure path
    int get_buffer "PyObject_GetBuffer"(object obj, Py_buffer* view, int flags)
    # not PyDict_GetItem, which saves and restores the error state on every call (a third of the
    # interpreter's share here): NULL with an error set only for a key whose hash or compare raises
    PyObject* dict_get "PyDict_GetItemWithError"(object mapping, object key)

cdef enum:
    DIGEST_SIZE = 20  # SHA-1
    SIGNATURE_CHARS = 28  # Base64 of 20 bytes
    # the signed values are gathered into a stack buffer of this size and hashed in one SHA1_Update:
    # a header's dozen short values, each its own SHA1_Update, cost a call and a copy into SHA-1's
    # block buffer apiece (docs/security.md, "What is left of a signed send")
    VALUES_BUFFER = 1024
    # the most keys a layout (see _Layout) holds: a header has a dozen or two
    LAYOUT_KEYS = 64
    # a layout is replaced after this many requests of its size in a row whose keys it does not fit
    # (two key orders of one key set alternating keep the first, and cost a failed walk each)
    LAYOUT_MISSES = 16
    MAX_LAYOUTS = 64  # sizes kept per Sha1Keys or Signer: cleared when full
    MAX_NAMES = 8  # the most resource fields a code has (permission.RESOURCE_FIELDS: 4)

cdef str SIGNATURE = "Signature"
cdef str ACCESS_KEY = "AccessKey"


cdef class Sha1Keys:
    """The SHA-1 states after a secret key's inner and outer pads (RFC 2104): `inner_pad` and
    `outer_pad` are the 64-byte padded key XORed with 0x36 and 0x5C, as signing._keyed makes them.

    `matches(fields, body)` is signing.signature_matches for this key: the request's signed keys in
    order come from `by_size` (signing's last key set of each size, its (getter, left-out keys, signed
    keys)); a request carrying `unique_key` that does not match without it, and whatever
    signature_check hands back, go to `fallback(fields, body)` (the pure check)."""

    cdef SHA_CTX inner
    cdef SHA_CTX outer
    cdef dict by_size
    cdef str unique_key
    cdef object fallback
    cdef dict layouts  # size -> _Layout, of the requests this key checks

    def __cinit__(self, bytes inner_pad not None, bytes outer_pad not None, dict by_size not None,
                  str unique_key not None, fallback not None):
        SHA1_Init(&self.inner)
        SHA1_Update(&self.inner, PyBytes_AS_STRING(inner_pad), PyBytes_GET_SIZE(inner_pad))
        SHA1_Init(&self.outer)
        SHA1_Update(&self.outer, PyBytes_AS_STRING(outer_pad), PyBytes_GET_SIZE(outer_pad))
        self.by_size = by_size
        self.unique_key = unique_key
        self.fallback = fallback
        self.layouts = {}

    cdef object _check(self, fields, body):
        """signature_check with the signed keys of the last key set of `fields`' size (None when
        there is none, or signature_check cannot decide)."""
        if type(fields) is not dict:
            return None
        last = _key_set(self.by_size, len(<dict>fields))
        if last is None:
            return None
        return _signature_check(fields, last[2], last[1], body, self, self.layouts)

    def matches(self, fields, body):
        verdict = self._check(fields, body)
        if verdict is True:
            return True
        if verdict is False and PyDict_Contains(fields, self.unique_key) == 0:
            return False
        return self.fallback(fields, body)

    def passes(self, list cmds not None, Py_ssize_t start, access_key, passed, passed_code,
               tuple names not None):
        """The index of the first of `cmds` from `start` on that validator.validate_run must look at
        itself: each request before it has `access_key` (this key's account, already found to be
        checked by signature), the code `passed_code` (not HEART_BEAT, whose resources come from its
        body), equal values under `names` (its code's resource fields) to `passed` (the fields of the
        last request that passed its permission check, from the same account) and a signature that
        matches: exactly the requests validate_run lets through on its way without a look-up. Anything
        else (a refusal included) stops here, and validate_run decides it the way it did.

        A request its size's layout fits (see _Layout) is read by position: its access key, resource
        values and Signature without a look-up; the others by look-ups, as before layouts."""
        cdef Py_ssize_t i, k, at, count = PyTuple_GET_SIZE(names)
        cdef PyObject* found
        cdef PyObject* row[LAYOUT_KEYS]
        cdef _Layout layout
        if type(passed) is not dict or access_key is None:
            return start
        # the values `passed` holds under `names` (_ABSENT where it has none), once for the run
        was = tuple([(<dict>passed).get(name, _ABSENT) for name in names])
        for i in range(start, PyList_GET_SIZE(cmds)):
            cmd = <object>PyList_GET_ITEM(cmds, i)
            fields = cmd.ext_fields
            if type(fields) is not dict:
                return i
            # read before the row of borrowed values is taken, which no attribute read may outlive
            code = cmd.code
            body = cmd.body
            layout = None
            if count <= MAX_NAMES:
                last = _key_set(self.by_size, PyDict_Size(fields))
                if last is not None and PyTuple_GET_SIZE(<tuple>last[2]) <= LAYOUT_KEYS:
                    layout = _fit(self.layouts, fields, <tuple>last[2], row)
            if layout is None:
                found = dict_get(fields, ACCESS_KEY)
            elif layout.access_at >= 0 and PyUnicode_CheckExact(<object>row[layout.access_at]):
                found = row[layout.access_at]  # a plain str: its compare runs no Python code
            else:
                found = NULL
            if found is NULL:
                PyErr_Clear()
                return i
            if found is not <PyObject*>access_key and PyObject_RichCompareBool(<object>found, access_key, Py_EQ) != 1:
                PyErr_Clear()
                return i
            if code is not passed_code and PyObject_RichCompareBool(code, passed_code, Py_EQ) != 1:
                PyErr_Clear()
                return i
            if layout is None:
                if _same_values(fields, passed, names) is not True:
                    return i
                if self._check(fields, body) is not True:
                    return i
                continue
            if layout.names is not names:
                layout.place(names)
            for k in range(count):  # permission.same_values, by position
                at = layout.name_at[k]
                found = row[at] if at >= 0 else <PyObject*>_ABSENT
                if found is PyTuple_GET_ITEM(was, k):
                    continue
                if at < 0 or PyTuple_GET_ITEM(was, k) is <PyObject*>_ABSENT or not PyUnicode_CheckExact(<object>found):
                    return i
                if PyObject_RichCompareBool(<object>found, <object>PyTuple_GET_ITEM(was, k), Py_EQ) != 1:
                    PyErr_Clear()
                    return i
            if _row_signature_check(row, layout, body, self) is not True:
                return i
        return PyList_GET_SIZE(cmds)


cdef class Signer:
    """The client's signing of one account (AclClientRPCHook's), prepared once per hook: `sign(fields,
    body)` adds AccessKey and then Signature (Base64 of the HMAC-SHA1 over the values in key order and
    the body, as signing.sign_request) to `fields` with dict's own store, in one call, and returns the
    Signature; the values are hashed from the strings' own UTF-8, without signing.py's key-order look-up,
    join, bytes and Base64 objects. The signed keys in order come from `by_size` (signing's last key
    set of each size for requests, filled by the pure path on the first request of a key set). None,
    with nothing decided, when it cannot sign this way (a request signed before, which the pure path
    signs afresh; a key set it does not know yet; anything _hmac does not take): the caller then signs
    the pure way, which puts AccessKey again in its place and computes the same signature."""

    cdef Sha1Keys keys
    cdef dict by_size
    cdef str access_key
    cdef dict layouts  # size -> _Layout, of the requests this signer signs

    def __cinit__(self, Sha1Keys keys not None, dict by_size not None, str access_key not None):
        self.keys = keys
        self.by_size = by_size
        self.access_key = access_key
        self.layouts = {}

    def sign(self, fields, body):
        cdef unsigned char digest[DIGEST_SIZE]
        cdef unsigned char text[SIGNATURE_CHARS + 1]  # EVP_EncodeBlock ends it with a NUL
        if type(fields) is not dict and not _reads_as_dict(fields):
            return None
        if PyDict_Contains(fields, SIGNATURE) != 0:  # signed before (a retry), or a read that raised
            PyErr_Clear()
            return None
        PyDict_SetItem(fields, ACCESS_KEY, self.access_key)
        last = _key_set(self.by_size, len(<dict>fields))
        if last is None or _hmac(fields, last[2], last[1], body, self.keys, digest, self.layouts) != 0:
            return None
        EVP_EncodeBlock(text, digest, DIGEST_SIZE)
        signature = PyUnicode_DecodeASCII(<char*>text, SIGNATURE_CHARS, NULL)
        PyDict_SetItem(fields, SIGNATURE, signature)
        return signature


cdef tuple _key_set(dict by_size, Py_ssize_t size):
    """signing's last key set of `size` keys in `by_size`: (getter, left-out keys, signed keys in
    order); None when there is none (or it is not such a tuple)."""
    cdef PyObject* last = dict_get(by_size, size)
    if last is NULL or type(<object>last) is not tuple or PyTuple_GET_SIZE(<object>last) != 3:
        PyErr_Clear()
        return None
    return <tuple>last


cdef object _DICT_GETITEM = dict.__getitem__
cdef object _DICT_GET = dict.get


cdef bint _reads_as_dict(fields):
    """A dict subclass whose reads are dict's own (the client's pre-encoded send header, EncodedExt, overrides
    only its mutators): its values read from the dict's storage are what the pure path's reads give."""
    if not PyDict_Check(fields):
        return False
    cls = type(fields)
    return cls.__getitem__ is _DICT_GETITEM and cls.get is _DICT_GET


cdef class _Layout:
    """Where a request's values sit in its dict: the keys of the first request of a key set, in that
    dict's order (`keys`), and the position there of each signed key in order (`ordered`, signing's
    tuple, by identity), of AccessKey and Signature, and of the resource fields `names` of the last
    code that asked (`place`). A client builds every request of a header type in the same order, so
    the next one is read by walking its dict once and comparing each key with the one at its position
    (the same object mostly: a decoder's cached key; else their texts), instead of a hash look-up per
    value (docs/security.md, "Session 10")."""

    cdef tuple ordered
    cdef tuple keys
    cdef Py_ssize_t misses  # requests of its size in a row it did not fit
    cdef Py_ssize_t access_at, signature_at  # -1: not a key of the set
    cdef tuple names
    cdef Py_ssize_t at[LAYOUT_KEYS]
    cdef Py_ssize_t name_at[MAX_NAMES]

    cdef Py_ssize_t _position(self, name) except -2:
        """The position of `name` (a str) among `keys`, -1 when it is not one of them."""
        cdef Py_ssize_t i
        if not PyUnicode_CheckExact(name) or not PyUnicode_IS_READY(name):
            return -1
        for i in range(PyTuple_GET_SIZE(self.keys)):
            if _same_key(<PyObject*>name, PyTuple_GET_ITEM(self.keys, i)):
                return i
        return -1

    cdef int place(self, tuple names) except -1:
        """name_at for `names` (at most MAX_NAMES)."""
        cdef Py_ssize_t k
        for k in range(PyTuple_GET_SIZE(names)):
            self.name_at[k] = self._position(<object>PyTuple_GET_ITEM(names, k))
        self.names = names
        return 0


cdef object _ABSENT = object()  # no value under a name (a dict value is never this)


cdef inline bint _same_key(PyObject* key, PyObject* expected):
    """Whether `key` is `expected` (a ready plain str) or a plain str of the same text: the object
    compare, then the length, kind and characters (no rich compare, no Python code)."""
    cdef Py_ssize_t size
    if key is expected:
        return True
    if not PyUnicode_CheckExact(<object>key) or not PyUnicode_IS_READY(<object>key):
        return False
    size = PyUnicode_GET_LENGTH(<object>key)
    if size != PyUnicode_GET_LENGTH(<object>expected) or PyUnicode_KIND(<object>key) != PyUnicode_KIND(<object>expected):
        return False
    return memcmp(PyUnicode_DATA(<object>key), PyUnicode_DATA(<object>expected), size * PyUnicode_KIND(<object>key)) == 0


cdef _Layout _fit(dict layouts, fields, tuple ordered, PyObject** row):
    """The layout kept in `layouts` for `fields`' size and `ordered` when `fields` (a dict, or one whose
    reads are dict's) has exactly its keys in its order: row[i] is then the value at position i
    (borrowed). None otherwise (nothing is decided: the caller looks the values up)."""
    cdef PyObject* kept
    cdef PyObject* key
    cdef PyObject* value
    cdef Py_ssize_t pos = 0, i = 0, size = PyDict_Size(fields)
    kept = dict_get(layouts, size)
    if kept is NULL:
        PyErr_Clear()
        return None
    layout = <_Layout>kept
    if layout.ordered is not ordered:
        return None
    keys = layout.keys
    if PyTuple_GET_SIZE(keys) != size:
        return None
    while PyDict_Next(fields, &pos, &key, &value):
        if i >= size or not _same_key(key, PyTuple_GET_ITEM(keys, i)):
            layout.misses += 1
            return None
        row[i] = value
        i += 1
    if i != size:
        return None
    layout.misses = 0
    return layout


cdef int _keep_layout(dict layouts, fields, tuple ordered) except -1:
    """Keep the layout of `fields`, a request found to have exactly the keys of `ordered` and its
    left-out ones, for the next requests of its size (unless one is kept that fits most of them)."""
    cdef Py_ssize_t size = PyDict_Size(fields), i, j
    cdef PyObject* kept = dict_get(layouts, size)
    cdef PyObject* key
    cdef PyObject* value
    cdef Py_ssize_t pos = 0
    if kept is NULL:
        PyErr_Clear()
    elif (<_Layout>kept).ordered is ordered and (<_Layout>kept).misses < LAYOUT_MISSES:
        return 0
    if size > LAYOUT_KEYS:
        return 0
    names = []
    while PyDict_Next(fields, &pos, &key, &value):  # the order _fit walks
        if not PyUnicode_CheckExact(<object>key) or not PyUnicode_IS_READY(<object>key):
            return 0
        names.append(<object>key)
    if len(names) != size:
        return 0
    layout = _Layout()
    layout.ordered = ordered
    layout.keys = tuple(names)
    for j in range(PyTuple_GET_SIZE(ordered)):
        i = layout._position(<object>PyTuple_GET_ITEM(ordered, j))
        if i < 0:
            return 0
        layout.at[j] = i
    layout.access_at = layout._position(ACCESS_KEY)
    layout.signature_at = layout._position(SIGNATURE)
    if PyDict_Size(layouts) >= MAX_LAYOUTS:
        layouts.clear()
    PyDict_SetItem(layouts, size, layout)
    return 0


cdef int _hmac(fields, tuple ordered, tuple left_out, body, Sha1Keys keys, unsigned char* digest,
               dict layouts) except -2:
    """HMAC-SHA1 of the values of `fields` under `ordered` (in that order), then `body`, into
    `digest`: 0, or -1 when `fields` is not a dict with exactly the keys `ordered` and `left_out` name
    (as many keys as their sum, the caller checks) or a value is not a str that encodes as UTF-8.
    With `layouts` (not None), the values are read by the layout kept for the request's size when it
    fits, and a request that takes the look-ups leaves its layout for the next ones."""
    cdef Py_ssize_t i
    cdef PyObject* row[LAYOUT_KEYS]
    cdef _Layout layout = None
    cdef int result
    if type(fields) is not dict and not _reads_as_dict(fields):
        return -1
    if layouts is not None and PyTuple_GET_SIZE(ordered) <= LAYOUT_KEYS:
        layout = _fit(layouts, fields, ordered, row)
    if layout is not None:
        return _row_digest(row, layout, body, keys, digest)
    for i in range(PyTuple_GET_SIZE(left_out)):
        if PyDict_Contains(fields, <object>PyTuple_GET_ITEM(left_out, i)) != 1:
            PyErr_Clear()
            return -1
    result = _digest(fields, ordered, NULL, body, keys, digest)
    if result == 0 and layouts is not None:
        _keep_layout(layouts, fields, ordered)
    return result


cdef int _digest(fields, tuple ordered, PyObject** values, body, Sha1Keys keys, unsigned char* digest) except -2:
    """_hmac's HMAC of the signed values, `values` (borrowed, in order) or else those of `fields` under
    `ordered`, then `body`: 0, or -1 when a value is missing or is not a str that encodes as UTF-8, or
    the body is not a buffer."""
    cdef SHA_CTX ctx
    cdef Py_ssize_t i, size
    cdef PyObject* value
    cdef const char* data
    cdef Py_buffer view
    cdef char joined[VALUES_BUFFER]
    cdef Py_ssize_t used = 0
    ctx = keys.inner  # a copy of the keyed state, on the stack
    for i in range(PyTuple_GET_SIZE(ordered)):
        if values is not NULL:
            value = values[i]
        else:
            value = dict_get(fields, <object>PyTuple_GET_ITEM(ordered, i))
        if value is NULL or not PyUnicode_Check(<object>value):
            PyErr_Clear()
            return -1
        if PyUnicode_IS_COMPACT_ASCII(<object>value):  # its characters are its UTF-8 (no call)
            data = <const char*>PyUnicode_DATA(<object>value)
            size = PyUnicode_GET_LENGTH(<object>value)
        else:
            data = PyUnicode_AsUTF8AndSize(<object>value, &size)  # the str's own (kept) UTF-8
            if data is NULL:  # a lone surrogate: the pure path encodes it its own way
                PyErr_Clear()
                return -1
        if used + size > VALUES_BUFFER:  # SHA-1 of the whole is the same however it is fed
            SHA1_Update(&ctx, joined, used)
            used = 0
            if size > VALUES_BUFFER:
                SHA1_Update(&ctx, data, size)
                continue
        memcpy(joined + used, data, size)
        used += size
    if used:
        SHA1_Update(&ctx, joined, used)
    if body is not None:
        if PyBytes_CheckExact(body):
            SHA1_Update(&ctx, PyBytes_AS_STRING(body), PyBytes_GET_SIZE(body))
        else:
            if get_buffer(body, &view, PyBUF_SIMPLE) != 0:
                PyErr_Clear()
                return -1
            SHA1_Update(&ctx, view.buf, view.len)
            PyBuffer_Release(&view)
    SHA1_Final(digest, &ctx)
    ctx = keys.outer
    SHA1_Update(&ctx, digest, DIGEST_SIZE)
    SHA1_Final(digest, &ctx)
    return 0


def signed_digest(fields, tuple ordered, tuple left_out, body, Sha1Keys keys not None):
    """The HMAC-SHA1 digest (bytes) of the values of `fields` under `ordered`, then `body`; None when
    `_hmac` cannot take the request."""
    cdef unsigned char digest[DIGEST_SIZE]
    if _hmac(fields, ordered, left_out, body, keys, digest, None) != 0:
        return None
    return PyBytes_FromStringAndSize(<char*>digest, DIGEST_SIZE)


def signature_check(fields, tuple ordered, tuple left_out, body, Sha1Keys keys not None):
    """_signature_check, for Python callers."""
    return _signature_check(fields, ordered, left_out, body, keys, None)


cdef object _signature_check(fields, tuple ordered, tuple left_out, body, Sha1Keys keys, dict layouts):
    """Whether the request's Signature is Base64 of the HMAC-SHA1 of its signed values under `ordered`
    and its body (compared in constant time); None when `_hmac` cannot take the request or the
    Signature is not an ASCII str (signing.signature_matches decides those)."""
    cdef unsigned char digest[DIGEST_SIZE]
    cdef PyObject* found = dict_get(fields, SIGNATURE) if type(fields) is dict else NULL
    if found is NULL:
        PyErr_Clear()
        return None
    signature = <object>found
    verdict = _signature_form(signature)
    if verdict is not True:
        return verdict
    if _hmac(fields, ordered, left_out, body, keys, digest, layouts) != 0:
        return None
    return _encodes_to(digest, signature)


cdef object _row_signature_check(PyObject** row, _Layout layout, body, Sha1Keys keys):
    """_signature_check of a request its layout fits, `row` its values by position."""
    cdef unsigned char digest[DIGEST_SIZE]
    if layout.signature_at < 0:
        return None
    signature = <object>row[layout.signature_at]
    verdict = _signature_form(signature)
    if verdict is not True:
        return verdict
    if _row_digest(row, layout, body, keys, digest) != 0:
        return None
    return _encodes_to(digest, signature)


cdef object _signature_form(signature):
    """True when `signature` can be checked here (an ASCII str of a digest's Base64 length), False when
    it is an ASCII str of another length (no digest's Base64: refused), None when it is not an ASCII
    str (signing.signature_matches decides it)."""
    if not PyUnicode_CheckExact(signature) or not PyUnicode_IS_COMPACT_ASCII(signature):
        return None
    return PyUnicode_GET_LENGTH(signature) == SIGNATURE_CHARS


cdef bint _encodes_to(unsigned char* digest, signature):
    """Whether Base64 of `digest` is `signature` (checked by _signature_form), compared in constant time."""
    cdef unsigned char text[SIGNATURE_CHARS + 1]  # EVP_EncodeBlock ends it with a NUL
    EVP_EncodeBlock(text, digest, DIGEST_SIZE)
    return CRYPTO_memcmp(text, PyUnicode_DATA(signature), SIGNATURE_CHARS) == 0


cdef int _row_digest(PyObject** row, _Layout layout, body, Sha1Keys keys, unsigned char* digest) except -2:
    """_digest of a request its layout fits: its signed values taken from `row` (borrowed) by position."""
    cdef PyObject* values[LAYOUT_KEYS]
    cdef Py_ssize_t j
    for j in range(PyTuple_GET_SIZE(layout.ordered)):
        values[j] = row[layout.at[j]]
    return _digest(None, layout.ordered, values, body, keys, digest)


def same_values(fields, previous, tuple names not None):
    """_same_values, for Python callers."""
    return _same_values(fields, previous, names)


cdef object _same_values(fields, previous, tuple names):
    """Whether `fields` and `previous` (dicts) hold equal values, or both none, under each of `names`:
    permission.same_values, without the tuples and bound methods the pure one's callers build (the
    validator compares each request of a run with the last one that passed)."""
    cdef PyObject* a
    cdef PyObject* b
    if type(fields) is not dict or type(previous) is not dict:
        return None
    for i in range(PyTuple_GET_SIZE(names)):
        name = <object>PyTuple_GET_ITEM(names, i)
        a = dict_get(fields, name)
        b = dict_get(previous, name)
        if a == b:  # the same object, or both absent
            if a is NULL:
                PyErr_Clear()
            continue
        if a is NULL or b is NULL:
            PyErr_Clear()
            return False
        if PyObject_RichCompareBool(<object>a, <object>b, Py_EQ) != 1:
            return False
    return True
