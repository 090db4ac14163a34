# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of the request signature's hot part (signing.py): the signed values of a request of a
known key set, joined as UTF-8 into one bytes object, and the HMAC-SHA1 over them and the body from
the keyed SHA-1 states. Built by setup.py when Cython and a C compiler are there; picked by signing.py
at import time unless ROCKETQ_NO_EXTENSIONS=1.

No crypto here: the hashing is the states' own (hashlib's, OpenSSL's) copy, update and digest; what
this saves is the interpreter's work around them (the tuple of values, the join and the encode, the
calls of signing.py's functions), about 0.4 us of a 2.5 us signature check. Anything outside what it
handles (a key missing or extra, a value that is not a str or does not encode as UTF-8, a dict
subclass) returns None, and signing.py computes the digest the pure way, so the result is always the
pure path's: tests/unit/acl/test_signing.py compares both.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_Contains, PyDict_GetItem
from cpython.exc cimport PyErr_Clear
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_Check
from libc.string cimport memcpy

API_VERSION = 1

# more values than a header has (the longest has about 20): the pure path
cdef enum:
    MAX_VALUES = 64

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size)


def signed_hmac(fields, tuple ordered, tuple left_out, body, inner, outer):
    """HMAC-SHA1 (the digest bytes) of the values of `fields` under `ordered` (in that order), then
    `body`, from the keyed states `inner` and `outer`; None when `fields` is not a dict with exactly
    the keys `ordered` and `left_out` name (as many keys as their sum, the caller checks) or a value is
    not a str that encodes as UTF-8."""
    if type(fields) is not dict or PyTuple_GET_SIZE(ordered) > MAX_VALUES:
        return None
    cdef Py_ssize_t n = PyTuple_GET_SIZE(ordered), i, total = 0
    cdef const char* data[MAX_VALUES]
    cdef Py_ssize_t size[MAX_VALUES]
    cdef PyObject* value
    cdef char* out
    for i in range(PyTuple_GET_SIZE(left_out)):
        if PyDict_Contains(fields, <object>PyTuple_GET_ITEM(left_out, i)) != 1:
            PyErr_Clear()
            return None
    for i in range(n):
        value = PyDict_GetItem(fields, <object>PyTuple_GET_ITEM(ordered, i))
        if value is NULL or not PyUnicode_Check(<object>value):
            return None
        data[i] = PyUnicode_AsUTF8AndSize(<object>value, &size[i])  # the str's own (kept) UTF-8
        if data[i] is NULL:  # a lone surrogate: the pure path encodes it its own way
            PyErr_Clear()
            return None
        total += size[i]
    values = PyBytes_FromStringAndSize(NULL, total)
    out = PyBytes_AS_STRING(values)
    for i in range(n):
        memcpy(out, data[i], size[i])
        out += size[i]
    mac = inner.copy()
    mac.update(values)
    if body:
        mac.update(body)
    digest = outer.copy()
    digest.update(mac.digest())
    return digest.digest()
