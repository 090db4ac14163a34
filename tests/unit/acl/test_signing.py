"""Signatures as RocketMQ 4.9.8 computes them.

The expected values were produced by Java itself: a 20-line program against the Maven artifact
org.apache.rocketmq:rocketmq-acl:4.9.8 (Java 17) that builds each request with
RemotingCommand.createRequestCommand(10, null), adds the extFields below, sets the body, runs
new AclClientRPCHook(new SessionCredentials(ak, sk)).doBeforeRequest(...) and prints the request's
"Signature" extField; the last vector is AclUtils.calSignature("abc".getBytes(UTF_8), "secret").
"""

from __future__ import annotations

import base64
import hmac

import pytest

from rocketq.remoting.acl import signing
from rocketq.remoting.acl.signing import (
    ACCESS_KEY,
    SIGNATURE,
    cal_signature,
    combine_request_content,
    java_key_order,
    request_signature,
    sign_request,
    signature_matches,
)
from rocketq.remoting.protocol.codes import SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.header_json import JSON_CODEC, DeferredJsonExt, EncodedExt
from rocketq.remoting.transport.acl_hook import AclClientRPCHook

JAVA_VECTORS = [
    # (access key, secret key, extFields before signing, body, Signature printed by Java)
    ("RocketMQ", "12345678", {"a": "g1", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "0"}, b"hello",
     "KxHyYno2FztlhVzybs1yv2wO3S0="),
    ("rocketmq2", "abcdefgh", {"topic": "T", "consumerGroup": "G"}, None, "BYgiulsLBhkp2AkUxH5grYYq3QM="),
    ("RocketMQ", "12345678", {"key": "\u4e2d\u6587", "Z": "z", "a": "A"}, bytes([0, 1, 2, 255]),
     "KCbGy/ioCyNjKXqAFy0bZnxwe0g="),
    ("RocketMQ", "12345678", {}, b"x", "JT13wf9jSfZcN//TwFtrcebaj78="),
]  # fmt: skip


@pytest.mark.parametrize(("ak", "sk", "fields", "body", "expected"), JAVA_VECTORS)
def test_signature_matches_java_acl_client_rpc_hook(
    ak: str, sk: str, fields: dict[str, str], body: bytes | None, expected: str
) -> None:
    signed = dict(fields)
    sign_request(signed, body, ak, sk)
    assert signed[SIGNATURE] == expected
    assert signed[ACCESS_KEY] == ak


@pytest.mark.parametrize(("ak", "sk", "fields", "body", "expected"), JAVA_VECTORS)
def test_client_hook_signs_the_command(
    ak: str, sk: str, fields: dict[str, str], body: bytes | None, expected: str
) -> None:
    cmd = RemotingCommand(code=10, ext_fields=dict(fields) or None, body=body or b"")
    AclClientRPCHook(ak, sk).do_before_request("127.0.0.1:10911", cmd)
    assert cmd.ext_fields is not None and cmd.ext_fields[SIGNATURE] == expected
    # Signing again (a retried request) gives the same signature: Signature itself is not signed.
    AclClientRPCHook(ak, sk).do_before_request("127.0.0.1:10911", cmd)
    assert cmd.ext_fields[SIGNATURE] == expected


def test_raw_signature_matches_java_acl_utils() -> None:
    assert cal_signature(b"abc", "secret") == "aUq9EIQtFh3bxU34oNV89k0NvMk="


def test_content_is_values_in_key_order_then_body() -> None:
    content = combine_request_content({"b": "2", "a": "1", SIGNATURE: "x", "c": "3"}, b"BODY")
    assert content == b"123BODY"
    fields = {"a": "1", "_UNIQUE_KEY_QUERY": "t"}
    assert combine_request_content(fields, None, skip_unique_query=True) == b"1"
    assert combine_request_content(fields, None) == b"t1"  # "_" sorts before "a"


def test_key_order_is_java_string_order() -> None:
    # U+FF21 (fullwidth A) sorts after U+1F600 by code point but before it in UTF-16 units (as Java).
    keys = ["\U0001f600", "\uff21", "a"]
    assert java_key_order(keys) == ["a", "\U0001f600", "\uff21"]


def test_hook_never_shows_the_secret() -> None:
    assert "sekret-value" not in repr(AclClientRPCHook("ak-1234567", "sekret-value"))


@pytest.mark.parametrize("token", [None, "tok\u00e9n"])
def test_the_client_hook_keeps_a_send_header_json_text_in_step_with_the_codec(token: str | None) -> None:
    ext = EncodedExt(a="grp", b="T\u00f6pic", c='quo"te', n="broker-a")
    ext.json = '{"a":"grp","b":"T\u00f6pic","c":"quo\\"te","n":"broker-a"}'
    request = RemotingCommand.request(310, ext_fields=ext, body=b"BODY")
    AclClientRPCHook("ak-\u00fcser", "secretKey1", token).do_before_request("127.0.0.1:9876", request)
    assert ext.json is not None  # kept, with the signing fields appended
    plain = RemotingCommand.request(310, ext_fields=dict(ext), body=b"BODY")
    plain.opaque = request.opaque
    assert JSON_CODEC.encode(request) == JSON_CODEC.encode(plain)  # what encoding the map writes
    assert ext[SIGNATURE] == cal_signature(combine_request_content(ext, b"BODY"), "secretKey1")
    # signed again (a retry of the same header): the text is dropped, the map encoded afresh
    AclClientRPCHook("ak-\u00fcser", "secretKey1", token).do_before_request("127.0.0.1:9876", request)
    assert ext.json is None


def test_the_client_hook_signs_a_msgpack_header_without_formatting_its_json() -> None:
    made: list[int] = []

    def make() -> str:
        made.append(1)
        return '{"a":"grp"}'

    ext = DeferredJsonExt(a="grp", b="T\u00f6pic")
    ext.defer(make)
    request = RemotingCommand.request(310, ext_fields=ext, body=b"BODY")
    request.serialize_type = SerializeType.MSGPACK  # the codec agreed with our broker
    AclClientRPCHook("ak-1", "secretKey1").do_before_request("127.0.0.1:10911", request)
    assert not made and ext.json is None  # never formatted, and no stale text left
    assert ext[ACCESS_KEY] == "ak-1"
    assert ext[SIGNATURE] == cal_signature(combine_request_content(ext, b"BODY"), "secretKey1")
    assert signature_matches(dict(ext), b"BODY", "secretKey1")


@pytest.mark.parametrize("skip", [False, True])
def test_keyed_signature_equals_the_joined_content_one(skip: bool) -> None:
    fields = {"b": "2", "_UNIQUE_KEY_QUERY": "true", "a": "\ud800lone", SIGNATURE: "x"}
    for body in (None, b"", b"BODY" * 300):
        expected = cal_signature(combine_request_content(fields, body, skip_unique_query=skip), "secretKey1")
        assert request_signature(fields, body, "secretKey1", skip_unique_query=skip) == expected


@pytest.mark.parametrize("secret", ["s" * 7, "k" * 64, "k" * 65, "\u00e9" * 40, "long-" * 60])
def test_keyed_states_equal_the_stdlib_hmac_for_any_secret_length(secret: str) -> None:
    # the SHA-1 states keyed once (RFC 2104's padding, a hashed key past 64 bytes) against hmac's own
    fields = {"b": "T", "a": "G"}
    for body in (None, b"BODY" * 300):
        expected = base64.b64encode(
            hmac.new(secret.encode(), combine_request_content(fields, body), "sha1").digest()
        ).decode()
        assert request_signature(fields, body, secret) == expected
        signed = {**fields, SIGNATURE: expected}
        assert signature_matches(signed, body, secret)
        assert not signature_matches(signed, (body or b"") + b"!", secret)
        assert not signature_matches(signed, body, secret + "x")


def test_key_sets_of_one_size_each_get_their_own_order() -> None:
    # the by-size shortcut must never reuse the getter of another key set with as many keys
    sets = [
        {"a": "1", "b": "2", SIGNATURE: "s"},
        {"a": "1", "c": "3", SIGNATURE: "s"},
        {"b": "2", "a": "1", "c": "3"},  # as many keys, no Signature: "c" is signed
        {"a": "1", "b": "2", "_UNIQUE_KEY_QUERY": "t"},
        {"a": "1", "b": "2", SIGNATURE: "s"},
    ]
    for skip in (True, False, True):
        for fields in sets:
            left_out = {SIGNATURE, "_UNIQUE_KEY_QUERY"} if skip else {SIGNATURE}
            expected = "".join(fields[k] for k in sorted(fields) if k not in left_out).encode()
            assert combine_request_content(fields, None, skip_unique_query=skip) == expected, (fields, skip)


def test_key_sets_with_huge_names_are_signed_but_not_kept() -> None:
    fields = {"k" * 10_000: "v", "a": "1"}
    assert combine_request_content(fields, None) == b"1v"
    assert all(tuple(fields) not in table for table in signing._GETTERS)


class _Ext(dict):  # type: ignore[type-arg]  # reads of its own: the compiled twin hands it to the pure path
    def __getitem__(self, key: str) -> str:
        return str(dict.__getitem__(self, key))


def _twin_cases() -> list[tuple[dict[str, str], bytes | None, str]]:
    """(fields with a Signature, body, secret): Java's vectors signed, each tampered, and the key sets
    and values the compiled twin hands back to the pure path."""
    cases: list[tuple[dict[str, str], bytes | None, str]] = []
    for ak, sk, fields, body, expected in JAVA_VECTORS:
        signed = {**fields, ACCESS_KEY: ak, SIGNATURE: expected}
        cases += [(signed, body, sk), ({**signed, "e": "tampered"}, body, sk), (signed, b"other", sk)]
        cases += [
            (signed, body, sk + "x"),
            (_Ext(signed), body, sk),
            ({**signed, SIGNATURE: "ab\u00e9"}, body, sk),
        ]
    base = {"a": "g1", "b": "TopicTest", "c": "TBW102"}
    for extra in (
        {},
        {"z": "\ud800lone"},  # a lone surrogate: Java's '?', never matching; the pure path encodes it
        {"_UNIQUE_KEY_QUERY": "true"},  # signed either way
        {"d": "4"},  # as many keys as the last case, another set
        {f"k{i:02}": str(i) for i in range(70)},  # more values than the twin takes
    ):
        fields = {**base, **extra}
        for skip in (False, True):
            signature = request_signature(fields, b"BODY", "secretKey1", skip_unique_query=skip)
            cases.append(({**fields, SIGNATURE: signature}, b"BODY", "secretKey1"))
            cases.append(({**fields, SIGNATURE: signature}, b"BODX", "secretKey1"))
    return cases


def test_the_compiled_twin_accepts_and_refuses_exactly_what_the_pure_path_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """_csign (when built) against the pure path: the same verdict and signature on every case, each
    computed twice (the first time teaches the key set, the second takes the twin)."""
    cases = _twin_cases()

    def verdicts() -> list[tuple[bool, str]]:
        out = []
        for fields, body, secret in cases + cases:
            unsigned = {k: v for k, v in fields.items() if k != SIGNATURE}
            out.append((signature_matches(fields, body, secret), request_signature(unsigned, body, secret)))
        return out

    compiled = verdicts()
    monkeypatch.setattr(signing, "_csign", None)
    monkeypatch.setattr(signing, "_KEYED", {})  # keyed again, without the twin's states
    pure = verdicts()
    assert compiled == pure
    assert [ok for ok, _ in pure[: len(cases)]].count(True) == 4 + 4 + 10  # Java's, as a subclass, ours


def _twin_keys(secret: str) -> object:
    if signing._csign is None:
        pytest.skip("the compiled accelerators are not built (or ROCKETQ_NO_EXTENSIONS is set)")
    signing._KEYED.pop(secret, None)
    return signing._keyed(secret)[2]


@pytest.mark.parametrize("body", [b"BODY", bytearray(b"BODY"), memoryview(b"xBODY")[1:]])
def test_the_compiled_twin_signs_a_known_key_set_as_the_pure_path(body: bytes) -> None:
    digest_of, keys = signing._csign and signing._csign.signed_digest, _twin_keys("secretKey1")
    fields = {"b": "T\u00f6pic", "a": "G", SIGNATURE: "x"}
    assert digest_of(fields, ("a", "b"), (SIGNATURE,), body, keys) == (
        hmac.new(b"secretKey1", "GT\u00f6pic".encode() + b"BODY", "sha1").digest()
    )
    assert digest_of(fields, ("a", "b"), (SIGNATURE,), None, keys) == (
        hmac.new(b"secretKey1", "GT\u00f6pic".encode(), "sha1").digest()
    )
    assert digest_of(fields, ("a", "c"), (SIGNATURE,), body, keys) is None
    assert digest_of(fields, ("a", "b"), ("d",), body, keys) is None
    assert digest_of(_Ext(fields), ("a", "b"), (SIGNATURE,), body, keys) is None
    # a subclass with dict's own reads (the client's send header) is signed by the twin
    assert digest_of(EncodedExt(fields), ("a", "b"), (SIGNATURE,), None, keys) == (
        hmac.new(b"secretKey1", "GT\u00f6pic".encode(), "sha1").digest()
    )
    assert digest_of({**fields, "b": "\udc00"}, ("a", "b"), (SIGNATURE,), None, keys) is None
    assert digest_of({**fields, "b": 7}, ("a", "b"), (SIGNATURE,), None, keys) is None
    # not a buffer: the pure path raises its error
    assert digest_of(fields, ("a", "b"), (SIGNATURE,), 12, keys) is None


def test_the_compiled_check_hands_back_what_it_does_not_decide() -> None:
    check, keys = signing._csign and signing._csign.signature_check, _twin_keys("secretKey1")
    fields = {"a": "G", SIGNATURE: request_signature({"a": "G"}, b"B", "secretKey1")}
    assert check(fields, ("a",), (SIGNATURE,), b"B", keys) is True
    assert check(fields, ("a",), (SIGNATURE,), b"C", keys) is False
    tampered = {**fields, SIGNATURE: fields[SIGNATURE][:-1] + "x"}
    assert check(tampered, ("a",), (SIGNATURE,), b"B", keys) is False
    assert check({**fields, SIGNATURE: "short"}, ("a",), (SIGNATURE,), b"B", keys) is False
    assert check({**fields, SIGNATURE: "\u00e9" * 28}, ("a",), (SIGNATURE,), b"B", keys) is None  # not ASCII
    assert check({**fields, SIGNATURE: 7}, ("a",), (SIGNATURE,), b"B", keys) is None
    assert check({"a": "G"}, ("a",), (), b"B", keys) is None  # no Signature
    assert check(_Ext(fields), ("a",), (SIGNATURE,), b"B", keys) is None


@pytest.mark.parametrize(("ak", "sk", "fields", "body", "expected"), JAVA_VECTORS)
def test_the_client_hook_signs_through_the_compiled_signer_as_java(
    ak: str, sk: str, fields: dict[str, str], body: bytes | None, expected: str
) -> None:
    """The second request of a key set takes the compiled signing (when built): the same fields, in
    the same order, and Java's signature; as a plain map and as a msgpack send header."""
    hook = AclClientRPCHook(ak, sk)
    assert (hook._sign is None) == (signing._csign is None)
    for _ in range(2):  # the first teaches the key set
        cmd = RemotingCommand(code=10, ext_fields=dict(fields), body=body or b"")
        hook.do_before_request("127.0.0.1:10911", cmd)
        assert cmd.ext_fields == {**fields, ACCESS_KEY: ak, SIGNATURE: expected}
        assert list(cmd.ext_fields) == [*fields, ACCESS_KEY, SIGNATURE]
        ext = DeferredJsonExt(fields)
        ext.defer(lambda: "{}")
        sent = RemotingCommand(code=10, ext_fields=ext, body=body or b"")
        sent.serialize_type = SerializeType.MSGPACK
        hook.do_before_request("127.0.0.1:10911", sent)
        assert list(ext.items()) == [*fields.items(), (ACCESS_KEY, ak), (SIGNATURE, expected)]
        assert ext.json is None


def test_the_compiled_signer_hands_back_what_it_does_not_sign() -> None:
    _twin_keys("secretKey1")
    sign = signing.request_signer("ak-1", "secretKey1")
    assert sign is not None
    fields = {"q1": "G", "q2": "T"}
    assert sign(dict(fields), b"B") is None  # a key set not seen yet: the pure path learns it
    expected = request_signature({**fields, ACCESS_KEY: "ak-1"}, b"B", "secretKey1")
    signed = dict(fields)
    assert sign(signed, b"B") == expected == signed[SIGNATURE]
    assert sign(signed, b"B") is None  # signed before (a retry): the pure path signs it afresh
    assert sign(_Ext(fields), b"B") is None  # reads of its own
    assert sign({**fields, "q2": 7}, b"B") is None  # type: ignore[dict-item]  # not a str
    assert sign(dict(fields), 12) is None  # type: ignore[arg-type]  # not a buffer


def _fresh(text: str) -> str:
    """`text` as a new str object (as a JSON header's keys arrive): equal, not identical."""
    return "".join(list(text))


def test_the_compiled_twin_reads_a_key_set_in_any_order_and_with_any_key_objects() -> None:
    """The compiled check and signer read the values of a request by where the last one of its key set
    had them (its layout): requests with keys in another order, with equal but not identical keys, with
    another key set of the same size, the two orders alternating past the point where the layout is
    replaced, tampered ones in between: each verdict and signature is the pure path's."""
    _twin_keys("secretKey1")
    check = signing.signature_checker("secretKey1")
    sign = signing.request_signer("ak-1", "secretKey1")
    pull = {"consumerGroup": "G", "topic": "T", "queueId": "0", "queueOffset": "5", "maxMsgNums": "32"}
    orders = [list(pull), list(reversed(pull))]
    verdicts = []
    for seq in range(60):
        names = orders[seq % 2] if seq >= 20 else orders[0]
        fields = {_fresh(k) if seq % 3 else k: f"{pull[k]}{seq}" for k in names}
        if seq % 7 == 6:  # the same size, another key set
            fields.pop(_fresh("maxMsgNums"))
            fields["maxMsgNumz"] = "1"
        expected = request_signature({**fields, ACCESS_KEY: "ak-1"}, b"B", "secretKey1")
        signed = dict(fields)
        assert sign is not None
        if sign(signed, b"B") is None:
            sign_request(signed, b"B", "ak-1", "secretKey1")
        assert signed == {**fields, ACCESS_KEY: "ak-1", SIGNATURE: expected}
        tampered = {**signed, _fresh("topic"): "other"}
        verdicts.append((check(signed, b"B"), check(tampered, b"B"), check(signed, b"C")))
    assert verdicts == [(True, False, False)] * 60
