"""The rocketq Spark sink's checks and row-to-message mapping (pyspark types only, no session)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import Row
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from rocketq.spark.offsets import OffsetSpecError
from rocketq.spark.sink import SinkOptions, check_schema, row_message, unique_key


def schema(**columns: object) -> StructType:
    return StructType([StructField(name, t, True) for name, t in columns.items()])  # type: ignore[arg-type]


OPTS = SinkOptions.parse({"namesrv": "127.0.0.1:9876", "topic": "T"})


def test_options_and_defaults() -> None:
    assert (OPTS.topic, OPTS.producer_group, OPTS.batch_size, OPTS.max_inflight) == (
        "T",
        "rocketq-spark-sink",
        64,
        4,
    )
    assert SinkOptions.parse({"namesrv": "x:1", "checkpointLocation": "/tmp/c"}).topic is None
    with pytest.raises(OffsetSpecError, match=r"unknown sink option.*tpoic"):
        SinkOptions.parse({"namesrv": "x:1", "tpoic": "T"})
    with pytest.raises(OffsetSpecError, match="'namesrv' is required"):
        SinkOptions.parse({"topic": "T"})


@pytest.mark.parametrize(
    ("columns", "problem"),
    [
        ({"topic": StringType()}, "needs a 'body' \\(or 'value'\\) column"),
        ({"body": BinaryType(), "value": StringType()}, "not both"),
        ({"body": IntegerType()}, "column 'body' is int; expected string or binary"),
        ({"body": BinaryType(), "partition": IntegerType()}, "has no column\\(s\\) partition"),
        (
            {"value": BinaryType(), "keys": StringType(), "key": StringType()},
            "'keys' or a 'key' column, not both",
        ),
    ],
)
def test_rows_that_cannot_become_messages_fail_before_any_task(
    columns: dict[str, object], problem: str
) -> None:
    with pytest.raises(OffsetSpecError, match=problem):
        check_schema(schema(**columns), OPTS)


def test_a_topic_comes_from_the_option_or_a_column() -> None:
    no_topic = SinkOptions.parse({"namesrv": "x:1"})
    with pytest.raises(OffsetSpecError, match="no topic"):
        check_schema(schema(body=BinaryType()), no_topic)
    check_schema(schema(topic=StringType(), value=StringType(), keys=ArrayType(StringType()),
                        properties=MapType(StringType(), StringType()), tags=StringType()), no_topic)  # fmt: skip


def test_row_message_maps_columns_and_sets_the_deterministic_id() -> None:
    msg_id = unique_key("query/3", 1, 7)
    assert msg_id == unique_key("query/3", 1, 7) != unique_key("query/3", 1, 8)
    assert len(msg_id) == 32 and msg_id == msg_id.upper()
    row = Row(topic="Col", value="héllo", key=b"k1", tags="TagA", properties={"p": "v"})
    msg = row_message(row, None, msg_id)
    assert (msg.topic, msg.body, msg.tags, msg.keys) == ("Col", "héllo".encode(), "TagA", ["k1"])
    assert msg.properties["p"] == "v" and msg.properties["UNIQ_KEY"] == msg_id
    assert row_message(row, "Option", msg_id).topic == "Option"  # the option wins, as Kafka's topic option
    listed = row_message(Row(body=b"\x00\x01", keys=["a", "b"]), "T", msg_id)
    assert (listed.body, listed.keys) == (b"\x00\x01", ["a", "b"])
    with pytest.raises(ValueError, match="has no topic"):
        row_message(Row(topic=None, body=b"x"), None, msg_id)
