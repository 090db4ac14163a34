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
from cpython.dict cimport PyDict_Check, PyDict_Contains, PyDict_SetItem
from cpython.exc cimport PyErr_Clear
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport Py_EQ, PyObject, PyObject_RichCompareBool
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_Check, PyUnicode_CheckExact
from libc.string cimport memcpy

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

    def __cinit__(self, bytes inner_pad not None, bytes outer_pad not None, dict by_size not None,
                  str unique_key not None, fallback not None):
        SHA1_Init(&self.inner)
        SHA1_Update(&self.inner, PyBytes_AS_STRING(inner_pad), PyBytes_GET_SIZE(inner_pad))
        SHA1_Init(&self.outer)
        SHA1_Update(&self.outer, PyBytes_AS_STRING(outer_pad), PyBytes_GET_SIZE(outer_pad))
        self.by_size = by_size
        self.unique_key = unique_key
        self.fallback = fallback

    cdef object _check(self, fields, body):
        """signature_check with the signed keys of the last key set of `fields`' size (None when
        there is none, or signature_check cannot decide)."""
        if type(fields) is not dict:
            return None
        last = _key_set(self.by_size, len(<dict>fields))
        if last is None:
            return None
        return _signature_check(fields, last[2], last[1], body, self)

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
        else (a refusal included) stops here, and validate_run decides it the way it did."""
        cdef Py_ssize_t i
        cdef PyObject* found
        if type(passed) is not dict or access_key is None:
            return start
        for i in range(start, PyList_GET_SIZE(cmds)):
            cmd = <object>PyList_GET_ITEM(cmds, i)
            fields = cmd.ext_fields
            if type(fields) is not dict:
                return i
            found = dict_get(fields, ACCESS_KEY)
            if found is NULL:
                PyErr_Clear()
                return i
            if found is not <PyObject*>access_key and PyObject_RichCompareBool(<object>found, access_key, Py_EQ) != 1:
                PyErr_Clear()
                return i
            code = cmd.code
            if code is not passed_code and PyObject_RichCompareBool(code, passed_code, Py_EQ) != 1:
                PyErr_Clear()
                return i
            if _same_values(fields, passed, names) is not True:
                return i
            if self._check(fields, cmd.body) is not True:
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

    def __cinit__(self, Sha1Keys keys not None, dict by_size not None, str access_key not None):
        self.keys = keys
        self.by_size = by_size
        self.access_key = access_key

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
        if last is None or _hmac(fields, last[2], last[1], body, self.keys, digest) != 0:
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


cdef int _hmac(fields, tuple ordered, tuple left_out, body, Sha1Keys keys, unsigned char* digest) except -2:
    """HMAC-SHA1 of the values of `fields` under `ordered` (in that order), then `body`, into
    `digest`: 0, or -1 when `fields` is not a dict with exactly the keys `ordered` and `left_out` name
    (as many keys as their sum, the caller checks) or a value is not a str that encodes as UTF-8."""
    cdef SHA_CTX ctx
    cdef Py_ssize_t i, size
    cdef PyObject* value
    cdef const char* data
    cdef Py_buffer view
    cdef char values[VALUES_BUFFER]
    cdef Py_ssize_t used = 0
    if type(fields) is not dict and not _reads_as_dict(fields):
        return -1
    for i in range(PyTuple_GET_SIZE(left_out)):
        if PyDict_Contains(fields, <object>PyTuple_GET_ITEM(left_out, i)) != 1:
            PyErr_Clear()
            return -1
    ctx = keys.inner  # a copy of the keyed state, on the stack
    for i in range(PyTuple_GET_SIZE(ordered)):
        value = dict_get(fields, <object>PyTuple_GET_ITEM(ordered, i))
        if value is NULL or not PyUnicode_Check(<object>value):
            PyErr_Clear()
            return -1
        data = PyUnicode_AsUTF8AndSize(<object>value, &size)  # the str's own (kept) UTF-8
        if data is NULL:  # a lone surrogate: the pure path encodes it its own way
            PyErr_Clear()
            return -1
        if used + size > VALUES_BUFFER:  # SHA-1 of the whole is the same however it is fed
            SHA1_Update(&ctx, values, used)
            used = 0
            if size > VALUES_BUFFER:
                SHA1_Update(&ctx, data, size)
                continue
        memcpy(values + used, data, size)
        used += size
    if used:
        SHA1_Update(&ctx, values, used)
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
    if _hmac(fields, ordered, left_out, body, keys, digest) != 0:
        return None
    return PyBytes_FromStringAndSize(<char*>digest, DIGEST_SIZE)


def signature_check(fields, tuple ordered, tuple left_out, body, Sha1Keys keys not None):
    """_signature_check, for Python callers."""
    return _signature_check(fields, ordered, left_out, body, keys)


cdef object _signature_check(fields, tuple ordered, tuple left_out, body, Sha1Keys keys):
    """Whether the request's Signature is Base64 of the HMAC-SHA1 of its signed values under `ordered`
    and its body (compared in constant time); None when `_hmac` cannot take the request or the
    Signature is not an ASCII str (signing.signature_matches decides those)."""
    cdef unsigned char digest[DIGEST_SIZE]
    cdef unsigned char text[SIGNATURE_CHARS + 1]  # EVP_EncodeBlock ends it with a NUL
    cdef PyObject* found = dict_get(fields, SIGNATURE) if type(fields) is dict else NULL
    if found is NULL:
        PyErr_Clear()
        return None
    if not PyUnicode_CheckExact(<object>found) or not PyUnicode_IS_COMPACT_ASCII(<object>found):
        return None
    signature = <object>found
    if PyUnicode_GET_LENGTH(signature) != SIGNATURE_CHARS:  # no Base64 of a digest
        return False
    if _hmac(fields, ordered, left_out, body, keys, digest) != 0:
        return None
    EVP_EncodeBlock(text, digest, DIGEST_SIZE)
    return CRYPTO_memcmp(text, PyUnicode_DATA(signature), SIGNATURE_CHARS) == 0


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
