"""`rocketq admin` speaks mqadmin: its verb names and option letters, its time format, help on every option,
whole values in --json, escaped control characters in tables, and a completion script that bash accepts."""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import subprocess

import pytest

from rocketq.client.admin_cli import _parser, parse_time, table
from rocketq.client.admin_cli.completion import script
from rocketq.client.admin_cli.core import body_fields, msg_rows
from rocketq.common.message import MessageExt

# The mqadmin 4.9 verbs a broker operator uses, and 5.x's queryConsumeQueue.
MQADMIN_VERBS = """updateTopic deleteTopic topicList topicRoute topicStatus topicClusterList updateTopicPerm allocateMQ
clusterList updateSubGroup deleteSubGroup producerConnection consumerConnection consumerStatus consumerProgress
getBrokerConfig updateBrokerConfig brokerStatus queryMsgById queryMsgByKey queryMsgByUniqueKey queryMsgByOffset
resetOffsetByTime sendMessage consumeMessage printMsg printMsgByQueue statsAll brokerConsumeStats wipeWritePerm
addWritePerm skipAccumulatedMessage cloneGroupOffset haStatus getNamesrvConfig updateNamesrvConfig updateKvConfig
deleteKvConfig getConsumerConfig queryCq queryConsumeQueue""".split()


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_mqadmin_verb_is_there_beside_its_kebab_name() -> None:
    parser = _parser()[0]
    subs = _subparsers(parser)
    for name in MQADMIN_VERBS:
        assert name in subs, name
    for name, sub in subs.items():
        assert sub.description, f"{name} has no description"
    assert subs["updateTopic"] is subs["update-topic"] and subs["queryConsumeQueue"] is subs["queryCq"]


def test_every_option_of_every_verb_has_help_text() -> None:
    parser, _verbs = _parser()
    missing = [
        f"{name} {'/'.join(action.option_strings) or action.dest}"
        for name, sub in _subparsers(parser).items()
        for action in sub._actions
        if not action.help
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["updateTopic", "-n", "127.0.0.1:9876", "-t", "T", "-c", "DefaultCluster"],
            {"topic": "T", "cluster": "DefaultCluster"},
        ),
        (
            [
                "updateTopic",
                "--namesrvAddr",
                "127.0.0.1:9876",
                "--topic",
                "T",
                "--readQueueNums",
                "2",
                "--writeQueueNums",
                "3",
            ],
            {"read_queues": 2, "write_queues": 3},
        ),
        (["queryMsgByKey", "-n", "x", "-t", "T", "-k", "order-7"], {"key": "order-7"}),
        (["consumerProgress", "-n", "x"], {"group": None}),
        (
            ["updateSubGroup", "-n", "x", "-g", "G", "-r", "3", "-q", "2", "-d", "false"],
            {"retry_max_times": 3, "retry_queue_nums": 2, "consume_broadcast_enable": False},
        ),
        (
            ["sendMessage", "-n", "x", "-t", "T", "-p", "hi", "-c", "TagA", "-k", "K1"],
            {"tags": "TagA", "keys": "K1"},
        ),
        (
            ["cloneGroupOffset", "-n", "x", "-s", "a", "-d", "b", "-t", "T"],
            {"src_group": "a", "dest_group": "b"},
        ),
        (
            ["queryMsgByOffset", "-n", "x", "-t", "T", "-b", "broker-a", "-i", "1", "-o", "5"],
            {"broker_name": "broker-a", "queue_id": 1, "offset": 5},
        ),
    ],
)
def test_mqadmin_option_letters_and_long_names(argv: list[str], expected: dict[str, object]) -> None:
    parser, _verbs = _parser()
    args = vars(parser.parse_args(argv))
    assert {k: args[k] for k in expected} == expected


def test_mqadmin_time_format() -> None:
    local = dt.datetime(2024, 3, 5, 6, 7, 8, 9000)
    assert parse_time("2024-03-05#06:07:08:009") == int(local.timestamp() * 1000)
    assert parse_time("2024-03-05#06:07:08") == int(local.replace(microsecond=0).timestamp() * 1000)
    parser, _verbs = _parser()
    args = parser.parse_args(
        ["resetOffsetByTime", "-n", "x", "-g", "G", "-t", "T", "-s", "2024-03-05#06:07:08:009"]
    )
    assert args.timestamp == int(local.timestamp() * 1000)
    with pytest.raises(argparse.ArgumentTypeError, match=r"yyyy-MM-dd#HH:mm:ss:SSS"):
        parse_time("05/03/2024")


def test_bad_time_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from rocketq.client.admin_cli import main

    assert main(["resetOffsetByTime", "-n", "127.0.0.1:1", "-g", "G", "-t", "T", "-s", "yesterday"]) == 2
    assert "not a time: 'yesterday'" in capsys.readouterr().err


def test_bodies_whole_in_json_and_escaped_in_tables() -> None:
    long_text = "x" * 500
    assert body_fields(long_text.encode()) == {"body": long_text, "bodyEncoding": "utf-8"}
    assert body_fields(b"\xff\x00\x01") == {"body": "/wAB", "bodyEncoding": "base64"}
    msg = MessageExt(topic="T", body="\x1b]0;owned\x07\x1b[2Jred\r\n\u009b".encode(), queue_id=0)
    rows = msg_rows([msg])
    assert rows[0]["body"] == "\x1b]0;owned\x07\x1b[2Jred\r\n\u009b" and rows[0]["bodyEncoding"] == "utf-8"
    shown = table(rows)
    assert all(ch == "\n" or 0x20 <= ord(ch) < 0x7F for ch in shown), (
        "no control character reaches the terminal"
    )
    assert "\\x1b]0;owned\\x07\\x1b[2Jred\\r\\n\\x9b" in shown
    cut = table([{"body": long_text}])
    assert len(cut.splitlines()[1]) <= 80 and cut.endswith("...")


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_completion_script_is_valid_bash_and_completes_verbs() -> None:
    verbs = _parser()[1]
    text = script(verbs)
    assert subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True).returncode == 0
    probe = text + '\nCOMP_WORDS=(rocketq admin resetOff); COMP_CWORD=2; _rocketq; echo "${COMPREPLY[@]}"\n'
    probe += (
        'COMP_WORDS=(rocketq admin resetOffsetByTime -); COMP_CWORD=3; _rocketq; echo "${COMPREPLY[@]}"\n'
    )
    out = subprocess.run(
        ["bash"], input=probe, text=True, capture_output=True, timeout=30
    ).stdout.splitlines()
    assert out[0] == "resetOffsetByTime"
    assert {"-g", "-t", "-s", "--timestamp", "-n"} <= set(out[1].split())
