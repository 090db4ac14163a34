"""The same wire-level requests to Apache's NameServer and broker (4.9.7 jars) and to ours, answers compared.

Each case is one request (raw frames through rocketq.testing.wire.RawConnection, as any client sends them),
run in order against both clusters from the same starting point; the answers' codes, remarks and chosen header
fields are compared after normalising what differs by nature (addresses, ports, timestamps, message ids).
Cases cover the request codes our daemons serve for which a scenario fits in one request, the bad-input
catalogue (bad names, oversize, unknown codes, missing fields, out-of-range queues and offsets) included.
A difference is either fixed in rocketq or listed in ON_PURPOSE with the reason (docs/compat.md has the table).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from apache_support import COMMIT_LOG_FILE_BYTES, ApacheCluster
from java_support import skip_or_fail_when_missing

from rocketq.remoting.protocol.codes import RequestCode as R
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.wire import ConnectionClosedError, RawConnection

pytestmark = [pytest.mark.asyncio(loop_scope="module")]
if (_skip := skip_or_fail_when_missing()) is not None:
    pytestmark.append(_skip)

TOPIC = "Diff"
GROUP = "cg-diff"
CLIENT = "127.0.0.1@diff"
PROPS = "TAGS\x01TagA\x02KEYS\x01key-1\x02UNIQ_KEY\x017F0000010000000000000000000000AA\x02"


def send(topic: str = TOPIC, queue_id: int = 0, body_size: int = 5, **extra: Any) -> dict[str, Any]:
    header = {"producerGroup": "pg-diff", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
              "queueId": queue_id, "sysFlag": 0, "bornTimestamp": 1_700_000_000_000, "flag": 0, "properties": PROPS,
              "reconsumeTimes": 0, "unitMode": False, "batch": False, **extra}  # fmt: skip
    return {"ext": {k: v for k, v in header.items() if v is not None}, "body": b"x" * body_size}


def pull(queue_id: int = 0, offset: int = 0, topic: str = TOPIC, **extra: Any) -> dict[str, Any]:
    # sysFlag 4: FLAG_SUBSCRIPTION, the expression travels with the pull (no heartbeat needed)
    header = {"consumerGroup": GROUP, "topic": topic, "queueId": queue_id, "queueOffset": offset, "maxMsgNums": 32,
              "sysFlag": 4, "commitOffset": 0, "suspendTimeoutMillis": 0, "subscription": "*", "subVersion": 0,
              "expressionType": "TAG", **extra}  # fmt: skip
    return {"ext": {k: v for k, v in header.items() if v is not None}}


HEARTBEAT = json.dumps({
    "clientID": CLIENT, "producerDataSet": [],
    "consumerDataSet": [{
        "groupName": GROUP, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": False,
        "subscriptionDataSet": [{"topic": TOPIC, "subString": "*", "tagsSet": [], "codeSet": [], "subVersion": 0,
                                 "classFilterMode": False, "expressionType": "TAG"}],
    }],
}).encode()  # fmt: skip
LOCK = json.dumps(
    {
        "consumerGroup": GROUP,
        "clientId": CLIENT,
        "mqSet": [{"topic": TOPIC, "brokerName": "broker-a", "queueId": 0}],
    }
).encode()


@dataclass
class Case:
    name: str
    target: str  # "namesrv" or "broker"
    code: int
    ext: dict[str, Any] = field(default_factory=dict)
    body: bytes = b""
    fields: tuple[str, ...] = ()  # answer header fields whose values must match
    body_keys: bool = False  # the answer body's top-level JSON keys must match


# The fields of an UPDATE_AND_CREATE_TOPIC header besides the topic (4 queues, read and write).
_CREATE_TOPIC_FIELDS = {
    "defaultTopic": "TBW102",
    "readQueueNums": 4,
    "writeQueueNums": 4,
    "perm": 6,
    "topicFilterType": "SINGLE_TAG",
    "topicSysFlag": 0,
    "order": False,
}

CASES = [
    Case("route of a missing topic", "namesrv", R.GET_ROUTEINFO_BY_TOPIC, {"topic": "NoSuchTopic"}),
    Case("cluster info", "namesrv", R.GET_BROKER_CLUSTER_INFO, body_keys=True),
    Case("kv config missing", "namesrv", R.GET_KV_CONFIG, {"namespace": "diff", "key": "k"}),
    Case("put kv config", "namesrv", R.PUT_KV_CONFIG, {"namespace": "diff", "key": "k", "value": "v"}),
    Case("get kv config", "namesrv", R.GET_KV_CONFIG, {"namespace": "diff", "key": "k"}, fields=("value",)),
    Case("delete kv config", "namesrv", R.DELETE_KV_CONFIG, {"namespace": "diff", "key": "k"}),
    Case("namesrv: unknown code", "namesrv", 9999),
    Case(
        "create topic",
        "broker",
        R.UPDATE_AND_CREATE_TOPIC,
        {"topic": TOPIC, **_CREATE_TOPIC_FIELDS},
    ),
    Case(
        "create topic with a bad name",
        "broker",
        R.UPDATE_AND_CREATE_TOPIC,
        {"topic": "bad topic!", **_CREATE_TOPIC_FIELDS},
    ),
    Case(
        "send",
        "broker",
        R.SEND_MESSAGE,
        **send(),
        fields=("queueId", "queueOffset", "MSG_REGION", "TRACE_ON"),
    ),
    Case("send to a bad topic name", "broker", R.SEND_MESSAGE, **send(topic="bad topic!")),
    Case("send to a system topic", "broker", R.SEND_MESSAGE, **send(topic="SCHEDULE_TOPIC_XXXX")),
    Case("send to a queue out of range", "broker", R.SEND_MESSAGE, **send(queue_id=99)),
    Case("send without a topic", "broker", R.SEND_MESSAGE, **send(topic=None)),  # type: ignore[arg-type]
    Case("send oversize", "broker", R.SEND_MESSAGE, **send(body_size=4 * 1024 * 1024 + 1)),
    Case("pull from a missing topic", "broker", R.PULL_MESSAGE, **pull(topic="NoSuchTopic")),
    Case("pull from a queue out of range", "broker", R.PULL_MESSAGE, **pull(queue_id=9)),
    Case(
        "pull found",
        "broker",
        R.PULL_MESSAGE,
        **pull(),
        fields=("nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"),
    ),
    Case(
        "pull a never-written queue",
        "broker",
        R.PULL_MESSAGE,
        **pull(queue_id=3),
        fields=("nextBeginOffset", "maxOffset"),
    ),
    Case("pull far past the end", "broker", R.PULL_MESSAGE, **pull(offset=100), fields=("nextBeginOffset",)),
    Case(
        "pull with SQL92, filter off",
        "broker",
        R.PULL_MESSAGE,
        **pull(expressionType="SQL92", subscription="a > 1"),
    ),
    Case("pull without a group", "broker", R.PULL_MESSAGE, **pull(consumerGroup=None)),
    Case("pull by the heartbeat's subscription, no heartbeat", "broker", R.PULL_MESSAGE, **pull(sysFlag=0)),
    Case(
        "query offset of a new group",
        "broker",
        R.QUERY_CONSUMER_OFFSET,
        {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0},
    ),
    Case(
        "update consumer offset",
        "broker",
        R.UPDATE_CONSUMER_OFFSET,
        {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0, "commitOffset": 1},
    ),
    Case(
        "query consumer offset",
        "broker",
        R.QUERY_CONSUMER_OFFSET,
        {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0},
        fields=("offset",),
    ),
    Case("max offset", "broker", R.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": 0}, fields=("offset",)),
    Case("min offset", "broker", R.GET_MIN_OFFSET, {"topic": TOPIC, "queueId": 0}, fields=("offset",)),
    Case(
        "min offset of a never-written queue",
        "broker",
        R.GET_MIN_OFFSET,
        {"topic": TOPIC, "queueId": 3},
        fields=("offset",),
    ),
    Case(
        "search offset by time 0",
        "broker",
        R.SEARCH_OFFSET_BY_TIMESTAMP,
        {"topic": TOPIC, "queueId": 0, "timestamp": 0},
        fields=("offset",),
    ),
    Case("view a message by a bad offset", "broker", R.VIEW_MESSAGE_BY_ID, {"offset": 99_999_999}),
    Case(
        "query by key",
        "broker",
        R.QUERY_MESSAGE,
        {"topic": TOPIC, "key": "key-1", "maxNum": 32, "beginTimestamp": 0, "endTimestamp": 2**62},
    ),
    Case("heartbeat", "broker", R.HEART_BEAT, body=HEARTBEAT),
    Case("consumer list", "broker", R.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": GROUP}, body_keys=True),
    Case("lock a queue", "broker", R.LOCK_BATCH_MQ, body=LOCK, body_keys=True),
    Case("unlock a queue", "broker", R.UNLOCK_BATCH_MQ, body=LOCK),
    Case(
        "end an unknown transaction",
        "broker",
        R.END_TRANSACTION,
        {
            "producerGroup": "pg-diff",
            "tranStateTableOffset": 0,
            "commitLogOffset": 99_999_999,
            "commitOrRollback": 8,
            "fromTransactionCheck": False,
            "msgId": "X",
        },
    ),
    Case(
        "send back an unknown message",
        "broker",
        R.CONSUMER_SEND_MSG_BACK,
        {"offset": 99_999_999, "group": GROUP, "delayLevel": 0, "originMsgId": "X", "originTopic": TOPIC},
    ),
    Case("topic stats", "broker", R.GET_TOPIC_STATS_INFO, {"topic": TOPIC}),
    Case("topic stats of a missing topic", "broker", R.GET_TOPIC_STATS_INFO, {"topic": "NoSuchTopic"}),
    Case("consume stats", "broker", R.GET_CONSUME_STATS, {"consumerGroup": GROUP, "topic": TOPIC}),
    Case(
        "consumer connections",
        "broker",
        R.GET_CONSUMER_CONNECTION_LIST,
        {"consumerGroup": GROUP},
        body_keys=True,
    ),
    Case(
        "consumer connections of a missing group",
        "broker",
        R.GET_CONSUMER_CONNECTION_LIST,
        {"consumerGroup": "nobody"},
    ),
    Case("all topic config", "broker", R.GET_ALL_TOPIC_CONFIG, body_keys=True),
    Case("all delay offsets", "broker", R.GET_ALL_DELAY_OFFSET),
    Case("runtime info", "broker", R.GET_BROKER_RUNTIME_INFO, body_keys=True),
    Case("unregister", "broker", R.UNREGISTER_CLIENT, {"clientID": CLIENT, "consumerGroup": GROUP}),
    Case("broker: unknown code", "broker", 9999),
    Case("delete topic", "broker", R.DELETE_TOPIC_IN_BROKER, {"topic": TOPIC}),
]

# Differences kept on purpose: case name -> why (docs/compat.md lists them too). Everything else must match.
ON_PURPOSE = {
    "namesrv: unknown code": "Apache's NameServer leaves an unknown code unanswered (the caller times out); ours "
    "answers REQUEST_CODE_NOT_SUPPORTED at once, as Apache's broker does",
    "create topic": "Apache's success keeps createResponseCommand's placeholder remark 'not set any response code'",
    "create topic with a bad name": "ours names the topic in the remark",
    "send to a bad topic name": "ours names the topic in the remark",
    "send without a topic": "ours names the missing header field (Apache: 'The specified topic is blank.')",
    "pull without a group": "Apache answers a NullPointerException's text; ours names the missing header field",
    "pull by the heartbeat's subscription, no heartbeat": "ours names the group after Apache's words and FAQ line",
    "send oversize": "ours adds the body's size and the setting's name (maxMessageSize) after Apache's words",
}

ANSWER_TIMEOUT_S = 10.0
_ADDR = re.compile(r"/?\d{1,3}(?:\.\d{1,3}){3}:\d+")
_MILLIS = re.compile(r"\b1\d{12}\b")
_HEX_ID = re.compile(r"\b[0-9A-F]{32,}\b")


def normal(text: str | None) -> str:
    if text is None:
        return ""
    return _HEX_ID.sub("ID", _MILLIS.sub("TS", _ADDR.sub("ADDR", text))).strip()


def summary(case: Case, answer: RemotingCommand) -> dict[str, Any]:
    out: dict[str, Any] = {"code": answer.code, "remark": normal(answer.remark)}
    ext = answer.ext_fields or {}
    for name in case.fields:
        out[name] = normal(ext.get(name))
    if case.body_keys and answer.body:
        try:
            parsed = json.loads(answer.body)
        except ValueError:
            parsed = None
        out["body"] = sorted(parsed) if isinstance(parsed, dict) else type(parsed).__name__
    return out


async def run_cases(namesrv: str, broker: str) -> list[dict[str, Any]]:
    """Every case in order; a request left unanswered or a connection closed on it is an answer too."""
    results: list[dict[str, Any]] = []
    addrs = {"namesrv": namesrv, "broker": broker}
    conns = {target: await RawConnection.open(addr) for target, addr in addrs.items()}
    try:
        for case in CASES:
            try:
                answer = await conns[case.target].call(
                    case.code, case.ext, case.body, timeout_s=ANSWER_TIMEOUT_S
                )
            except TimeoutError:
                results.append({"code": None, "remark": f"no answer within {ANSWER_TIMEOUT_S} s"})
            except ConnectionClosedError:
                results.append({"code": None, "remark": "connection closed"})
            else:
                results.append(summary(case, answer))
                continue
            await conns[case.target].close()
            conns[case.target] = await RawConnection.open(addrs[case.target])
    finally:
        for conn in conns.values():
            await conn.close()
    return results


@dataclass
class Both:
    ours: list[dict[str, Any]]
    apache: list[dict[str, Any]]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def both(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Both]:
    work = tmp_path_factory.mktemp("differential")
    apache = ApacheCluster(work / "apache", work / "apache-store")
    try:
        await asyncio.to_thread(apache.start)
        apache_results = await run_cases(apache.namesrv_addr, apache.broker_addr)
    except BaseException:
        print(apache.log_tails())
        raise
    finally:
        await asyncio.to_thread(apache.close)
    async with LocalCluster(
        work / "ours", broker_overrides={"mappedFileSizeCommitLog": COMMIT_LOG_FILE_BYTES}
    ) as ours:
        our_results = await run_cases(ours.namesrv_addr, ours.brokers[0].addr)
    yield Both(our_results, apache_results)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.name for c in CASES])
async def test_same_answer_as_apaches(both: Both, index: int) -> None:
    case = CASES[index]
    ours, theirs = both.ours[index], both.apache[index]
    if case.name in ON_PURPOSE:
        # a kept difference: still ours answers, and a refusal says why
        assert ours["code"] is not None and (ours["code"] == 0 or ours["remark"]), ours
        return
    assert ours == theirs, f"{case.name}: ours {ours} != Apache's {theirs}"
