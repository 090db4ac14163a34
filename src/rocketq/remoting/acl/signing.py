"""Request signatures exactly as RocketMQ 4.9 computes them.

Port of org.apache.rocketmq.acl.common.AclUtils.combineRequestContent / AclSigner.calSignature and
of AclClientRPCHook.doBeforeRequest: the signed content is the UTF-8 bytes of every extFields value
except Signature, concatenated in the order of their keys, followed by the body; the signature is
Base64(HmacSHA1(secretKey, content)). Keys are ordered as Java's TreeMap orders Strings (UTF-16 code
units), which differs from Python's code-point order only for keys mixing astral characters with
U+E000..U+FFFF; `java_key_order` handles it.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rocketq.common.constants import UNIQUE_MSG_QUERY_FLAG
from rocketq.common.record.accel import load_extension

# org.apache.rocketmq.acl.common.SessionCredentials
ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"


def _utf16_units(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def java_key_order(keys: Iterable[str]) -> list[str]:
    """`keys` sorted as java.lang.String.compareTo sorts them."""
    ordered = sorted(keys)
    if "".join(ordered).isascii():  # one C call; the common case
        return ordered
    return sorted(ordered, key=_utf16_units)


def _values_getter(ordered: list[str]) -> Callable[[Mapping[str, str]], tuple[str, ...]]:
    if len(ordered) > 1:
        return operator.itemgetter(*ordered)  # a tuple of the values, in one C call
    return lambda f: tuple(f[k] for k in ordered)  # (itemgetter of one key returns the bare value)


# The order of the signed values by the request's keys, one table per value of skip_unique_query:
# requests of one header type share their key set, so the sort is done once per header type (the
# lookup hashes and compares the tuple of keys, which the header decoder mostly interns).
# Bounded: cleared when full, so odd key sets cannot grow it; and a key set whose names are longer
# than any header's together is not kept (the signature is checked before the request is known to
# come from the account: what a stranger sends must not pin memory).
_Getter = Callable[[Mapping[str, str]], tuple[str, ...]]
_GETTERS: tuple[dict[tuple[str, ...], tuple[_Getter, tuple[str, ...]]], ...] = ({}, {})  # (getter, its keys)
_MAX_GETTERS = 512
_MAX_KEPT_KEYS_CHARS = 4096
# In front of it, by the number of keys: the getter of the last key set of that size and the
# left-out keys that set had. A request of that size whose values the getter finds (else KeyError)
# and which has those left-out keys too has exactly that key set (as many keys, all of them
# present), so its tuple of keys need not be built, hashed and compared (0.2-0.3 us a request). With
# them the signed keys in order, for the compiled twin (_csign.signed_hmac), which checks the same way.
_LAST_BY_SIZE: tuple[dict[int, tuple[_Getter, tuple[str, ...], tuple[str, ...]]], ...]
_LAST_BY_SIZE = ({}, {})


def _signed_bytes(fields: Mapping[str, str], skip_unique_query: bool) -> bytes:
    """The values a signature covers (all but Signature, and `_UNIQUE_KEY_QUERY` when asked), in key
    order, as UTF-8."""
    values: tuple[str, ...] | None = None
    last = _LAST_BY_SIZE[skip_unique_query].get(len(fields))
    if last is not None:
        getter, left_out, _ordered = last
        try:
            values = getter(fields)
        except KeyError:  # another key set of that size
            pass
        else:
            for key in left_out:
                if key not in fields:
                    values = None
                    break
    if values is None:
        values = _values_by_keys(fields, skip_unique_query)
    text = "".join(values)
    try:
        return text.encode()
    except UnicodeEncodeError:
        # a lone surrogate (which Java encodes as '?') must not crash the verifier; such a value
        # simply never matches a signature made by Java
        return text.encode("utf-8", "surrogatepass")


def _values_by_keys(fields: Mapping[str, str], skip_unique_query: bool) -> tuple[str, ...]:
    """_signed_bytes' values when the last key set of that size is not the request's."""
    keys = tuple(fields)
    getters = _GETTERS[skip_unique_query]
    known = getters.get(keys)
    left = (SIGNATURE, UNIQUE_MSG_QUERY_FLAG) if skip_unique_query else (SIGNATURE,)
    if known is None:
        ordered = tuple(k for k in java_key_order(keys) if k not in left)
        known = (_values_getter(list(ordered)), ordered)
        if sum(map(len, keys)) > _MAX_KEPT_KEYS_CHARS:
            return known[0](fields)
        if len(getters) >= _MAX_GETTERS:
            getters.clear()
            _LAST_BY_SIZE[skip_unique_query].clear()
        getters[keys] = known
    getter, ordered = known
    _LAST_BY_SIZE[skip_unique_query][len(keys)] = (getter, tuple(k for k in left if k in fields), ordered)
    return getter(fields)


def signed_values(fields: Mapping[str, str], *, skip_unique_query: bool = False) -> str:
    """The values a signature covers (all but Signature, and `_UNIQUE_KEY_QUERY` when asked), in key order."""
    return _signed_bytes(fields, skip_unique_query).decode("utf-8", "surrogatepass")


def combine_request_content(
    fields: Mapping[str, str], body: bytes | None, *, skip_unique_query: bool = False
) -> bytes:
    """The bytes a signature covers: signed_values, then the body (AclUtils.combineRequestContent)."""
    data = _signed_bytes(fields, skip_unique_query)
    return data + body if body else data


def cal_signature(data: bytes, secret_key: str) -> str:
    """Base64(HmacSHA1(secret_key, data)), as AclSigner.calSignature."""
    # hmac.digest: OpenSSL's one-shot HMAC, about twice as fast as hmac.new(...).digest().
    return base64.b64encode(hmac.digest(secret_key.encode("utf-8"), data, "sha1")).decode("ascii")


CSIGN_API_VERSION = 6  # _csign.pyx's, raised when its functions change
# The compiled twin of the signature (see _csign.pyx) unless ROCKETQ_NO_EXTENSIONS is set or it was not
# built: the HMAC and the check of a request of the last key set of its size.
# A keyed state made while it is None (the tests' pure runs) has no twin, and its requests go the pure way.
_csign: Any = load_extension("rocketq.remoting.acl._csign", CSIGN_API_VERSION)

# HMAC-SHA1 (RFC 2104) keyed once per secret key: the SHA-1 states after the key's inner and outer
# pads, as the stdlib hmac module builds them (hmac.HMAC's pure path, same key padding); a request
# copies both. Measured on the content of a signed 1 KiB send (docs/security.md, "The ACL step
# alone"): one-shot hmac.digest costs about 2.5 us (OpenSSL 3's HMAC() sets up its digest on every
# call), a copy of a keyed hmac.HMAC 1.9 us (its Python-level copy/update/digest), the copied SHA-1
# states 1.5 us, of which SHA-1 itself and OpenSSL's context copies take most. The values and the body
# go in as two updates, not joined into one buffer (a copy of the body). With the compiled twin, the
# same pads keyed once more as its plain SHA_CTX states (_csign.Sha1Keys). Bounded like _GETTERS.
# (inner, outer, the twin's Sha1Keys or None, signature_matches with the key bound)
_Keyed = tuple[Any, Any, Any, Callable[[Mapping[str, str], "bytes | None"], bool]]
_KEYED: dict[str, _Keyed] = {}
_MAX_KEYED = 256
_SHA1_BLOCK = 64  # bytes
_INNER_PAD = bytes(b ^ 0x36 for b in range(256))
_OUTER_PAD = bytes(b ^ 0x5C for b in range(256))


def _keyed(secret_key: str) -> _Keyed:
    """The SHA-1 states after the inner and the outer pad of `secret_key`."""
    key = secret_key.encode("utf-8")
    if len(key) > _SHA1_BLOCK:
        key = hashlib.sha1(key).digest()
    key = key.ljust(_SHA1_BLOCK, b"\0")
    inner, outer = key.translate(_INNER_PAD), key.translate(_OUTER_PAD)
    pure = functools.partial(_pure_signature_matches, secret_key=secret_key)
    twin = (
        None
        if _csign is None
        else _csign.Sha1Keys(inner, outer, _LAST_BY_SIZE[True], UNIQUE_MSG_QUERY_FLAG, pure)
    )
    states = (hashlib.sha1(inner), hashlib.sha1(outer), twin, pure if twin is None else twin.matches)
    if len(_KEYED) >= _MAX_KEYED:
        _KEYED.clear()
    _KEYED[secret_key] = states
    return states


def _hmac_sha1(inner: Any, outer: Any, values: bytes, body: bytes | None) -> bytes:
    mac = inner.copy()
    mac.update(values)
    if body:
        mac.update(body)
    out = outer.copy()
    out.update(mac.digest())
    return out.digest()  # type: ignore[no-any-return]


def hmac_sha1_base64(values: bytes, body: bytes | None, secret_key: str) -> str:
    """cal_signature(values + body, secret_key), from the keyed states."""
    inner, outer, _twin, _matches = _KEYED.get(secret_key) or _keyed(secret_key)
    digest = _hmac_sha1(inner, outer, values, body)
    return binascii.b2a_base64(digest, newline=False).decode("ascii")


def request_signature(
    fields: Mapping[str, str], body: bytes | None, secret_key: str, *, skip_unique_query: bool = False
) -> str:
    """cal_signature(combine_request_content(fields, body, ...), secret_key), computed without the join."""
    inner, outer, twin, _matches = _KEYED.get(secret_key) or _keyed(secret_key)
    digest = None
    if twin is not None:
        last = _LAST_BY_SIZE[skip_unique_query].get(len(fields))
        if last is not None:
            digest = _csign.signed_digest(fields, last[2], last[1], body, twin)
    if digest is None:
        digest = _hmac_sha1(inner, outer, _signed_bytes(fields, skip_unique_query), body)
    return binascii.b2a_base64(digest, newline=False).decode("ascii")


def signature_matches(fields: Mapping[str, str], body: bytes | None, secret_key: str) -> bool:
    """Whether the request's Signature is its signature under `secret_key` (constant-time compare).

    Java's validator leaves `_UNIQUE_KEY_QUERY` out of the content, and Java's client signs it: a
    request carrying it is accepted signed either way.
    """
    return signature_checker(secret_key)(fields, body)


def signature_checker(secret_key: str) -> Callable[[Mapping[str, str], bytes | None], bool]:
    """signature_matches with `secret_key` bound (the compiled twin's when built): what the validator
    calls on each request of a run from one account."""
    return (_KEYED.get(secret_key) or _keyed(secret_key))[3]


def run_passer(secret_key: str) -> Any:
    """The compiled twin's `passes` for `secret_key` (see _csign.Sha1Keys.passes: which requests of a
    run validate_run may let through without looking at them itself); None without the twin."""
    twin = (_KEYED.get(secret_key) or _keyed(secret_key))[2]
    return None if twin is None else twin.passes


_Sign = Callable[[dict[str, str], bytes | None], str | None]


def request_signer(access_key: str, secret_key: str) -> _Sign | None:
    """The compiled twin's signing for one account (see _csign.Signer.sign): `sign(fields, body)` adds
    AccessKey and Signature to `fields` (a dict, or a subclass whose reads are dict's: dict's own store,
    as sign_request's `put=dict.__setitem__`) and returns the Signature, or None when the caller must
    sign_request instead. None without the twin. Prepared once per client hook."""
    twin = (_KEYED.get(secret_key) or _keyed(secret_key))[2]
    return None if twin is None else _csign.Signer(twin, _LAST_BY_SIZE[False], access_key).sign


def _pure_signature_matches(fields: Mapping[str, str], body: bytes | None, secret_key: str) -> bool:
    signature = fields.get(SIGNATURE)
    if not signature or not signature.isascii():  # a Base64 text is ASCII
        return False
    if hmac.compare_digest(request_signature(fields, body, secret_key, skip_unique_query=True), signature):
        return True
    if UNIQUE_MSG_QUERY_FLAG in fields:
        return hmac.compare_digest(request_signature(fields, body, secret_key), signature)
    return False


def sign_request(
    fields: dict[str, str],
    body: bytes | None,
    access_key: str,
    secret_key: str,
    security_token: str | None = None,
    *,
    put: Callable[[dict[str, str], str, str], None] = operator.setitem,
) -> None:
    """Add AccessKey (and SecurityToken) and the Signature over them to `fields`, as AclClientRPCHook.

    `put` sets a field (a subclass' own __setitem__ by default; the client hook passes dict's, see it).
    """
    put(fields, ACCESS_KEY, access_key)
    if security_token:
        put(fields, SECURITY_TOKEN, security_token)
    put(fields, SIGNATURE, request_signature(fields, body, secret_key))
