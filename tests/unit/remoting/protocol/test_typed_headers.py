"""Typed headers: Java field names, required fields, Java parsing rules, V1 <-> V2 (docs/protocol.md 1.7, 2.4)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.remoting.protocol.errors import BadHeaderValueError, MissingHeaderFieldError
from rocketq.remoting.protocol.headers.base import CommandHeader, Int32, jfield
from rocketq.remoting.protocol.headers.offset import (
    GetMaxOffsetRequestHeader,
    UpdateConsumerOffsetResponseHeader,
)
from rocketq.remoting.protocol.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketq.remoting.protocol.headers.retry import ConsumerSendMsgBackRequestHeader
from rocketq.remoting.protocol.headers.send import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)

HEADER_MODULES = ["send", "pull", "offset", "client", "retry", "admin", "query", "transaction", "pop"]

V2_EXT = {
    "a": "pg_demo",
    "b": "TopicTest",
    "c": "TBW102",
    "d": "4",
    "e": "1",
    "f": "0",
    "g": "1700000000000",
    "h": "0",
    "i": "UNIQ_KEY\x01C0A8000A3039\x02WAIT\x01true\x02TAGS\x01TagA",
    "j": "0",
    "k": "false",
    "m": "false",
    "n": "broker-a",
}


def _header_classes() -> list[type[CommandHeader]]:
    classes = []
    for name in HEADER_MODULES:
        try:
            module = importlib.import_module(f"rocketq.remoting.protocol.headers.{name}")
        except ImportError:  # pragma: no cover - a family not written yet
            continue
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(obj, CommandHeader)
                and obj is not CommandHeader
                and obj.__module__ == module.__name__
            ):
                classes.append(obj)
    return classes


def test_v2_decodes_java_client_ext_fields_and_converts_to_v1() -> None:
    v2 = SendMessageRequestHeaderV2.from_ext_fields(V2_EXT)
    v1 = v2.to_v1()
    assert v1 == SendMessageRequestHeader(
        producer_group="pg_demo",
        topic="TopicTest",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=1,
        sys_flag=0,
        born_timestamp=1700000000000,
        flag=0,
        properties=V2_EXT["i"],
        reconsume_times=0,
        unit_mode=False,
        batch=False,
        max_reconsume_times=None,
        bname="broker-a",
    )
    assert SendMessageRequestHeaderV2.from_v1(v1) == v2
    assert v1.to_v2() == v2
    assert v2.to_ext_fields() == V2_EXT  # primitive booleans always travel, null fields never


def test_v2_bname_falls_back_to_inherited_field_and_l_maps_to_max_reconsume_times() -> None:
    v2 = SendMessageRequestHeaderV2.from_ext_fields(
        {**V2_EXT, "n": None, "bname": "broker-b", "l": "3", "m": "TRUE"}  # type: ignore[dict-item]  # a Java null
    )
    v1 = v2.to_v1()
    assert (v1.bname, v1.max_reconsume_times, v1.batch) == ("broker-b", 3, True)


def test_missing_required_field_names_the_java_field() -> None:
    ext = dict(V2_EXT)
    del ext["g"]
    with pytest.raises(MissingHeaderFieldError) as err:
        SendMessageRequestHeaderV2.from_ext_fields(ext)
    assert err.value.field == "g" and err.value.header == "SendMessageRequestHeaderV2"
    assert "'g'" in str(err.value)
    with pytest.raises(MissingHeaderFieldError, match="consumerGroup"):
        PullMessageRequestHeader.from_ext_fields({"topic": "T"})
    with pytest.raises(MissingHeaderFieldError, match="topic"):
        GetMaxOffsetRequestHeader.from_ext_fields(None)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        ("True", True),
        ("false", False),
        ("yes", False),
        ("1", False),
        (" true", False),
        ("", False),
    ],
)
def test_booleans_parse_like_java_boolean_parse_boolean(raw: str, expected: bool) -> None:
    header = ConsumerSendMsgBackRequestHeader.from_ext_fields(
        {"offset": "1", "group": "g", "delayLevel": "0", "unitMode": raw}
    )
    assert header.unit_mode is expected


@pytest.mark.parametrize(
    "raw", ["", " 1", "1 ", "1_000", "0x10", "1.0", "\u0661", "2147483648", "-2147483649", "abc"]
)
def test_bad_int32_values_name_the_field(raw: str) -> None:
    with pytest.raises(BadHeaderValueError) as err:
        GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": raw})
    assert err.value.field == "queueId"


def test_int64_range_and_signs() -> None:
    ok = PullMessageResponseHeader.from_ext_fields(
        {
            "suggestWhichBrokerId": "+0",
            "nextBeginOffset": "-1",
            "minOffset": str(2**63 - 1),
            "maxOffset": "007",
        }
    )
    assert (ok.suggest_which_broker_id, ok.next_begin_offset, ok.min_offset, ok.max_offset) == (
        0,
        -1,
        2**63 - 1,
        7,
    )
    with pytest.raises(BadHeaderValueError, match="minOffset"):
        PullMessageResponseHeader.from_ext_fields(
            {"suggestWhichBrokerId": "0", "nextBeginOffset": "0", "minOffset": str(2**63), "maxOffset": "0"}
        )


def test_unknown_keys_are_ignored() -> None:
    ext = {**V2_EXT, "AccessKey": "ak", "Signature": "", "OnsChannel": "", "_UNIQUE_KEY_QUERY": "true"}
    assert SendMessageRequestHeaderV2.from_ext_fields(ext) == SendMessageRequestHeaderV2.from_ext_fields(
        V2_EXT
    )


def test_send_response_carries_region_and_trace_switch() -> None:
    header = SendMessageResponseHeader(
        msg_id="AC", queue_id=1, queue_offset=7, msg_region="DefaultRegion", trace_on=False
    )
    ext = header.to_ext_fields()
    assert ext == {
        "msgId": "AC",
        "queueId": "1",
        "queueOffset": "7",
        "MSG_REGION": "DefaultRegion",
        "TRACE_ON": "false",
    }
    assert SendMessageResponseHeader.from_ext_fields(ext) == header


def test_empty_header_encodes_to_nothing() -> None:
    assert UpdateConsumerOffsetResponseHeader().to_ext_fields() == {}
    assert (
        UpdateConsumerOffsetResponseHeader.from_ext_fields({"x": "1"}) == UpdateConsumerOffsetResponseHeader()
    )


def test_custom_header_machinery_kw_only_float_and_defaults() -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Sample(CommandHeader):
        ratio: float = jfield("ratio")
        count: Int32 = jfield("count", 5)
        label: str = jfield("label", "x")
        plain_name: bool | None = None

    assert Sample.java_names() == ("ratio", "count", "label", "plainName")
    s = Sample.from_ext_fields({"ratio": "0.5", "plainName": "true"})
    assert s == Sample(ratio=0.5, count=5, label="x", plain_name=True)
    assert s.to_ext_fields() == {"ratio": "0.5", "count": "5", "label": "x", "plainName": "true"}
    with pytest.raises(BadHeaderValueError, match="a number"):
        Sample.from_ext_fields({"ratio": "half"})


def test_unsupported_field_types_are_rejected_at_first_use() -> None:
    @dataclass(frozen=True, slots=True)
    class Bad(CommandHeader):
        items: list[str] = jfield("items", None)

    with pytest.raises(TypeError):
        Bad.from_ext_fields({})

    @dataclass(frozen=True, slots=True)
    class Factory(CommandHeader):
        name: str = dataclasses.field(default_factory=str)

    with pytest.raises(TypeError):
        Factory.from_ext_fields({})

    @dataclass(frozen=True, slots=True)
    class Union2(CommandHeader):
        value: int | str = jfield("value")

    with pytest.raises(TypeError):
        Union2.from_ext_fields({})


def test_every_header_class_is_frozen_slotted_and_round_trips() -> None:
    classes = _header_classes()
    assert len(classes) >= 20
    for cls in classes:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls  # type: ignore[attr-defined]
        assert "__slots__" in cls.__dict__, cls
        ext = {}
        for spec in cls._field_specs():
            ext[spec.java] = {"str": "v", "int32": "7", "int64": "-9", "bool": "true", "float": "1.5"}[
                spec.kind
            ]
        header = cls.from_ext_fields(ext)
        assert header.to_ext_fields() == ext, cls
        assert cls.from_ext_fields(header.to_ext_fields()) == header


_java_strings = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=20)


@settings(max_examples=100, deadline=None)
@given(
    producer_group=_java_strings,
    topic=_java_strings,
    queue_id=st.integers(-(2**31), 2**31 - 1),
    born=st.integers(-(2**63), 2**63 - 1),
    properties=st.none() | _java_strings,
    unit_mode=st.booleans(),
    batch=st.booleans(),
    max_reconsume=st.none() | st.integers(-(2**31), 2**31 - 1),
)
def test_v1_v2_round_trip_through_ext_fields(
    producer_group: str,
    topic: str,
    queue_id: int,
    born: int,
    properties: str | None,
    unit_mode: bool,
    batch: bool,
    max_reconsume: int | None,
) -> None:
    v1 = SendMessageRequestHeader(
        producer_group=producer_group,
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=born,
        flag=0,
        properties=properties,
        unit_mode=unit_mode,
        batch=batch,
        max_reconsume_times=max_reconsume,
    )
    assert SendMessageRequestHeader.from_ext_fields(v1.to_ext_fields()) == v1
    v2 = SendMessageRequestHeaderV2.from_ext_fields(v1.to_v2().to_ext_fields())
    assert v2.to_v1() == v1
