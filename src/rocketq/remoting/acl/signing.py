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
import hmac
from collections.abc import Iterable, Mapping

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


def combine_request_content(
    fields: Mapping[str, str], body: bytes | None, *, skip: Iterable[str] = ()
) -> bytes:
    """The bytes a signature covers: values (Signature and `skip` left out) in key order, then the body."""
    if skip:
        left_out = {SIGNATURE, *skip}
        values = "".join([fields[k] for k in java_key_order(fields) if k not in left_out])
    else:
        values = "".join([fields[k] for k in java_key_order(fields) if k != SIGNATURE])
    # surrogatepass: a lone surrogate (which Java encodes as '?') must not crash the verifier; such a
    # value simply never matches a signature made by Java.
    data = values.encode("utf-8", "surrogatepass")
    return data + body if body else data


def cal_signature(data: bytes, secret_key: str) -> str:
    """Base64(HmacSHA1(secret_key, data)), as AclSigner.calSignature."""
    # hmac.digest: OpenSSL's one-shot HMAC, about twice as fast as hmac.new(...).digest().
    return base64.b64encode(hmac.digest(secret_key.encode("utf-8"), data, "sha1")).decode("ascii")


def sign_request(
    fields: dict[str, str],
    body: bytes | None,
    access_key: str,
    secret_key: str,
    security_token: str | None = None,
) -> None:
    """Add AccessKey (and SecurityToken) and the Signature over them to `fields`, as AclClientRPCHook."""
    fields[ACCESS_KEY] = access_key
    if security_token:
        fields[SECURITY_TOKEN] = security_token
    fields[SIGNATURE] = cal_signature(combine_request_content(fields, body), secret_key)
