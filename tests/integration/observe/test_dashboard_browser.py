"""The dashboard end to end in headless Chromium (Debian's chromium + chromium-driver, driven by selenium).

Real daemons (LocalCluster), the real `rocketq dashboard` command as a subprocess, a real browser.
Every page is opened and screenshotted into test-artifacts/dashboard/ (ROCKETQ_ARTIFACTS overrides).
The browser is never downloaded: without /usr/bin/chromium and /usr/bin/chromedriver the test skips
(.ci/run installs both).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rocketq.client import ConsumeFromWhere, LitePullConsumer
from rocketq.testing.waiting import wait_for

CHROMIUM, CHROMEDRIVER = (
    shutil.which("chromium") or "/usr/bin/chromium",
    shutil.which("chromedriver") or "/usr/bin/chromedriver",
)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(
        not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
        reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
    ),
]
ARTIFACTS = (
    Path(os.environ.get("ROCKETQ_ARTIFACTS", Path(__file__).resolve().parents[3] / "test-artifacts"))
    / "dashboard"
)
READY = re.compile(r"^READY dashboard (?P<url>http://\S+/)$")
TOPIC, GROUP, KEY = "TopicDash", "cg-dash", "dash-key"
HOSTILE = "<script>document.title='pwned'</script><b>not bold</b> & hello"


class DashboardProcess:
    """`rocketq dashboard --port 0` as a subprocess; stopped by its own pid only."""

    def __init__(self, namesrv_addr: str, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rocketq", "dashboard", "--namesrv-addr", namesrv_addr, "--port", "0", "--log-level", "warning",
             *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self.url: str | None = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            match = READY.match(line.strip())
            if match:
                self.url = match.group("url")
                self._ready.set()
        self._ready.set()

    def wait_ready(self, timeout_s: float = 30) -> str:
        self._ready.wait(timeout_s)
        if self.url is None:
            raise AssertionError("the dashboard printed no READY line:\n" + "\n".join(self.lines))
        return self.url

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._reader.join(5)  # it ends at the pipe's end of file
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture
def browser() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,1000",
                "--no-first-run", "--disable-extensions", "--disable-background-networking"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


class Page:
    """The browser steps of the test, with a screenshot after each."""

    def __init__(self, driver: object, base: str) -> None:
        self.d = driver
        self.base = base.rstrip("/")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def open(self, path: str) -> None:
        self.d.get(self.base + path)  # type: ignore[attr-defined]

    def shot(self, name: str) -> None:
        self.d.save_screenshot(str(ARTIFACTS / f"{name}.png"))  # type: ignore[attr-defined]

    def css(self, selector: str) -> object:
        from selenium.webdriver.common.by import By

        return self.d.find_element(By.CSS_SELECTOR, selector)  # type: ignore[attr-defined]

    def all(self, selector: str) -> list:
        from selenium.webdriver.common.by import By

        return self.d.find_elements(By.CSS_SELECTOR, selector)  # type: ignore[attr-defined]

    def text(self, selector: str) -> str:
        return self.css(selector).text  # type: ignore[attr-defined]

    def fill(self, selector: str, value: str) -> None:
        element = self.css(selector)
        element.clear()  # type: ignore[attr-defined]
        element.send_keys(value)  # type: ignore[attr-defined]

    def submit(self, selector: str) -> None:
        self.css(selector).click()  # type: ignore[attr-defined]

    def until(
        self, check: Callable[[], bool], what: str, timeout_s: float = 20, reload: bool = False
    ) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if check():
                    return
            except Exception:  # the element is not there yet
                pass
            if time.monotonic() > deadline:
                self.shot(f"timeout-{re.sub(r'[^a-z]+', '-', what.lower())}")
                raise AssertionError(f"{what}: not seen within {timeout_s:.0f}s at {self.d.current_url}")  # type: ignore[attr-defined]
            time.sleep(0.2)
            if reload:
                self.d.refresh()  # type: ignore[attr-defined]

    def banner(self) -> str:
        found = self.all("#error-banner")
        return found[0].text if found else ""


def create_send_find_and_trace(p: Page) -> str:
    for name, path in (("01-cluster", "/"), ("02-topics", "/topics"), ("03-groups", "/groups"),
                       ("04-producers", "/producers"), ("05-messages", "/messages"), ("06-trace", "/trace")):  # fmt: skip
        p.open(path)
        assert not p.banner(), f"{path}: {p.banner()}"
        p.shot(name)
        assert "Traceback" not in p.d.page_source and "Internal Server Error" not in p.d.page_source  # type: ignore[attr-defined]
    p.open("/")
    assert "broker-a" in p.text("#brokers") and "master" in p.text("#brokers")

    # A name the broker would refuse: the form says why, nothing is created.
    p.open("/topics")
    p.fill("#new-topic", "bad topic!")
    p.submit("#create-topic-submit")
    p.until(lambda: "'bad topic!' has characters other than" in p.banner(), "the bad-name banner")
    p.shot("07-topic-bad-name")

    # A name the broker itself refuses: its remark is the banner.
    p.fill("#new-topic", "TBW102")
    p.submit("#create-topic-submit")
    p.until(lambda: "conflict with system topic" in p.banner(), "the broker's remark")
    p.shot("07b-topic-broker-remark")

    p.fill("#new-topic", TOPIC)
    p.submit("#create-topic-submit")
    p.until(lambda: p.text("#topic-name") == TOPIC, "the new topic's page")
    assert "created" in p.text("#notice-banner")
    p.shot("08-topic-created")

    p.fill("#send-tags", "TagD")
    p.fill("#send-keys", KEY)
    p.fill("#send-body", HOSTILE)
    p.submit("#send-submit")
    p.until(lambda: bool(p.all("#msg-body")), "the sent message's page", reload=True)
    msg_id = p.text("#msg-id")
    # Untrusted content is text: the script did not run, no element was made of it.
    assert p.text("#msg-body") == HOSTILE
    assert not p.all("#msg-body script") and not p.all("#msg-body b")
    assert p.d.title != "pwned"  # type: ignore[attr-defined]
    p.shot("09-message-sent")

    p.open("/messages")
    p.fill("#key-topic", TOPIC)
    p.fill("#key-key", KEY)
    p.submit("#by-key-submit")
    p.until(lambda: msg_id in p.text("#found"), "the message found by key", reload=True)
    p.shot("10-found-by-key")
    p.fill("#time-topic", TOPIC)
    p.fill("#time-begin", "0")  # from the first message to now
    p.submit("#by-time-submit")
    p.until(lambda: msg_id in p.text("#found"), "the message found by time")
    p.shot("10b-found-by-time")
    p.open(f"/messages?topic={TOPIC}&key={KEY}")
    p.css("#found a").click()  # type: ignore[attr-defined]
    p.until(lambda: bool(p.all("#trace .trace-Pub")), "the Pub trace record", reload=True)
    assert "PID_ROCKETQ_DASHBOARD" in p.text("#trace") and "success" in p.text("#trace")
    p.shot("11-message-trace")
    p.open(f"/trace?id={msg_id}")
    p.until(lambda: bool(p.all("#trace .trace-Pub")), "the trace page")
    p.shot("12-trace-page")
    p.open("/message?id=not-a-message-id")  # bad input in a link: a banner, not a stack trace
    assert "not an offset message id" in p.banner() and "Traceback" not in p.d.page_source  # type: ignore[attr-defined]
    return msg_id


def reset_offset_and_delete(p: Page) -> None:
    p.open(f"/groups/{GROUP}")
    assert p.text("#total-lag") == "0", "the group consumed everything"
    p.shot("13-group-consumed")
    p.fill("#reset-time", "0")  # back to the first message
    p.submit("#reset-submit")
    p.until(lambda: "reset" in p.text("#notice-banner"), "the reset notice")
    p.until(lambda: p.text("#total-lag") == "1", "a lag of 1 after the reset", reload=True)
    p.shot("14-group-reset")

    p.open(f"/topics/{TOPIC}")
    p.submit("#delete-topic-submit")
    p.until(lambda: "deleted" in p.text("#notice-banner"), "the delete notice")
    p.open("/topics")
    assert TOPIC not in p.text("#topic-list")
    p.shot("15-topic-deleted")


def dead_namesrv(p: Page) -> None:
    p.open("/")
    p.until(lambda: bool(p.banner()), "the error banner of a dead NameServer", reload=True, timeout_s=40)
    assert "Traceback" not in p.d.page_source  # type: ignore[attr-defined]
    p.shot("16-namesrv-down")


async def test_dashboard_in_a_real_browser(cluster_factory, browser) -> None:
    cluster = await cluster_factory(broker_overrides={"traceTopicEnable": "true"})
    ns = cluster.namesrv_addr
    dashboard = DashboardProcess(ns)
    try:
        page = Page(browser, await asyncio.to_thread(dashboard.wait_ready))
        await asyncio.to_thread(create_send_find_and_trace, page)
        # The group consumes the one message and commits: lag 0, until the browser resets it.
        async with LitePullConsumer(
            GROUP,
            namesrv_addr=ns,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            auto_commit=False,
        ) as lite:
            lite.subscribe(TOPIC, "*")
            got: list = []

            async def polled() -> bool:
                got.extend(await lite.poll(timeout_ms=200))
                return len(got) >= 1

            await wait_for(polled, timeout_s=30, what="the test message consumed")
            await lite.commit()
        await asyncio.to_thread(reset_offset_and_delete, page)
        await cluster.namesrvs[0].stop()
        await asyncio.to_thread(dead_namesrv, page)
    finally:
        dashboard.stop()
        print("dashboard output:\n" + "\n".join(dashboard.lines))  # shown when the test fails


async def test_a_signed_dashboard_of_an_acl_cluster_has_a_login(
    cluster_factory, browser, tmp_path: Path
) -> None:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text("accounts:\n  - accessKey: dashboard\n    secretKey: dashboard-secret\n    admin: true\n")
    cluster = await cluster_factory(broker_overrides={"aclEnable": "true", "aclFilePath": str(acl)})
    users = tmp_path / "users.properties"
    users.write_text("# rocketmq-dashboard's format\nadmin=s3cret\n")
    dash = DashboardProcess(
        cluster.namesrv_addr,
        "--users-file",
        str(users),
        "--access-key",
        "dashboard",
        "--secret-key",
        "dashboard-secret",
    )
    try:
        url = await asyncio.to_thread(dash.wait_ready)
        p = Page(browser, url)
        p.open("/topics")
        p.until(lambda: bool(p.all("#login-form")), "the login page")
        p.shot("20-login")
        p.fill("#username", "admin")
        p.fill("#password", "wrong")
        p.submit("#login-button")
        p.until(lambda: "wrong user name or password" in p.banner(), "the refused login")
        p.fill("#username", "admin")
        p.fill("#password", "s3cret")
        p.submit("#login-button")
        p.until(lambda: bool(p.all("#new-topic")), "the topics page after the login")
        # Its requests are signed: the ACL broker creates the topic for it.
        p.fill("#new-topic", "TopicSigned")
        p.submit("#create-topic-submit")
        p.until(lambda: p.text("#topic-name") == "TopicSigned", "the signed topic's page")
        p.open("/")
        assert "broker-a" in p.text("#brokers")
        p.shot("21-logged-in")
        p.submit("#logout")
        p.until(lambda: bool(p.all("#login-form")), "the login page after logging out")
        p.open("/")
        p.until(lambda: bool(p.all("#login-form")), "no page without a session")
    finally:
        await asyncio.to_thread(dash.stop)
    refused = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "rocketq", "dashboard", "--namesrv-addr", cluster.namesrv_addr, "--access-key", "x",
         "--secret-key", "y"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2 and "needs --users-file" in refused.stderr
