"""The catalogue: with ACL on, every request code the broker and the NameServer register is sent
unsigned; each must be refused (NO_PERMISSION) unless it is on the list of codes that need no
signature, and each code on that list must indeed pass ACL.

The lists: Java's (4.9.8) broker runs its ACL hook on every request that has a processor
(BrokerController.initialAcl; NettyRemotingAbstract.processRequestCommand calls the hooks after the
processor lookup), so the broker's list is empty. Java's NameServer has no ACL; ours verifies the
codes that change it (rocketq.remoting.acl.permission.NAMESRV_WRITE_CODES), so its list is every
other code it serves.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from rocketq.broker.processors.registry import SUPPORTED_CODES
from rocketq.namesrv.processors.registry import build_handler_table
from rocketq.remoting.acl.permission import NAMESRV_WRITE_CODES
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.wire import RawConnection

BROKER_NO_SIGNATURE_NEEDED: frozenset[int] = frozenset()  # as Java 4.9.8's broker


def namesrv_codes() -> set[int]:
    return set(build_handler_table(None))  # type: ignore[arg-type]  # only the table's keys are read


async def _refused_codes(addr: str, codes: set[int]) -> dict[int, tuple[int, str | None]]:
    answers: dict[int, tuple[int, str | None]] = {}
    async with await RawConnection.open(addr) as conn:
        for code in sorted(codes):
            response = await conn.request(RemotingCommand.request(code, {}))
            answers[code] = (response.code, response.remark)
    return answers


async def test_every_unsigned_code_is_refused_or_on_the_list(
    cluster_factory: ClusterFactory, tmp_path: Path, sec: SimpleNamespace
) -> None:
    acl_file = sec.write_acl(tmp_path / "conf")
    cluster = await cluster_factory(
        broker_overrides=sec.acl_overrides(acl_file), namesrv_overrides=sec.acl_overrides(acl_file)
    )
    for addr, codes, exempt in (
        (cluster.brokers[0].addr, set(SUPPORTED_CODES), BROKER_NO_SIGNATURE_NEEDED),
        (cluster.namesrvs[0].addr, namesrv_codes(), frozenset(namesrv_codes() - NAMESRV_WRITE_CODES)),
    ):
        answers = await _refused_codes(addr, codes)
        refused = {code for code, (rc, _) in answers.items() if rc == ResponseCode.NO_PERMISSION}
        assert refused == codes - exempt, (
            f"{addr}: refused {sorted(refused)}, expected {sorted(codes - exempt)}"
        )
        for code in refused:
            assert answers[code][1] == "No accessKey is configured", (code, answers[code])
        assert len(codes) > 5
