"""Helpers of the observability tests: a metrics scrape, parsed by prometheus_client's own parser."""

from __future__ import annotations

import asyncio
import re
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from rocketq.testing.cluster import DaemonProcess

METRICS_LINE = re.compile(r"^METRICS (?P<role>\w+) (?P<addr>\S+:\d+)$", re.MULTILINE)
PROM = {"metricsExporterType": "PROM", "metricsPromExporterPort": 0}


def metrics_addr(daemon: DaemonProcess) -> str:
    match = METRICS_LINE.search(daemon.stdout_text())
    assert match, f"{daemon!r} printed no METRICS line:\n{daemon.stdout_text()}"
    return match.group("addr")


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:  # loopback only
        assert response.status == 200
        return response.read().decode()


async def scrape(daemon: DaemonProcess) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    """metric family name -> its samples (name, labels, value)."""
    text = await asyncio.to_thread(_get, f"http://{metrics_addr(daemon)}/metrics")
    return {
        family.name: [(s.name, s.labels, s.value) for s in family.samples]
        for family in text_string_to_metric_families(text)
    }


def value(families: dict, sample_name: str, **labels: str) -> float | None:
    """The one sample named `sample_name` whose labels include `labels`; None when there is none."""
    family = families.get(
        sample_name.removesuffix("_total")
        .removesuffix("_bucket")
        .removesuffix("_count")
        .removesuffix("_sum"),
        [],
    )
    found = [
        v
        for name, lab, v in family
        if name == sample_name and all(lab.get(k) == x for k, x in labels.items())
    ]
    assert len(found) <= 1, f"{sample_name} {labels}: several samples {found}"
    return found[0] if found else None
