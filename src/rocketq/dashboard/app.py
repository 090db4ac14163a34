"""The dashboard's pages: cluster, topics, consumer groups, producers, messages, message trace.

Mirrors apache/rocketmq-dashboard's pages (ClusterController, TopicController, ConsumerController,
ProducerController, MessageController, MessageTraceController) as server-rendered HTML. Reads and
changes go through one Admin (and one Producer for test messages, with message trace on, so a test
message's trace shows). Forms post, then redirect back with a notice or an error banner. Names are
checked as the broker checks them before anything is sent, and a refusal shows the broker's remark.
A NameServer or broker that cannot be reached shows the error banner, never a stack trace. Every
value shown is escaped by Jinja2's autoescaping: message bodies and properties are untrusted.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from rocketq.client import Admin, ConsumeFromWhere, LitePullConsumer, Message, MessageQueue, Producer
from rocketq.client.trace.view import query_msg_trace_by_id
from rocketq.common import constants as C
from rocketq.common.errors import RocketQError
from rocketq.common.message import MessageExt
from rocketq.dashboard.history import History
from rocketq.dashboard.login import LoginRequired, Sessions, login_routes

log = logging.getLogger("rocketq.dashboard")

HERE = Path(__file__).parent
REQUEST_TIMEOUT_S = 10.0
DASHBOARD_PRODUCER_GROUP = "PID_ROCKETQ_DASHBOARD"
BROWSE_GROUP = "CID_ROCKETQ_DASHBOARD_BROWSE"  # reads by time with it; never commits an offset
BROWSE_MAX = 256
BROWSE_TIME_S = 5.0
_PERMS = {"6": "read and write", "4": "read only", "2": "write only", "0": "none"}


class FormError(ValueError):
    """A form value the broker would refuse; shown as the error banner, nothing is sent."""


def _fmt_ms(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S") if ms and ms > 0 else "-"


class Dashboard:
    def __init__(self, namesrv_addr: str, client: Mapping[str, Any] | None = None) -> None:
        self.namesrv_addr = namesrv_addr
        # ACL credentials and TLS of every client the dashboard opens (access_key, secret_key, use_tls, ...)
        self.client: dict[str, Any] = dict(client or {})
        self.admin = Admin(namesrv_addr=namesrv_addr, **self.client)
        self.producer: Producer | None = None
        self.history = History()
        # autoescape for every template: bodies, properties, names and remarks are all untrusted text
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True)
        self.templates = Jinja2Templates(env=env)
        self.templates.env.filters["time"] = _fmt_ms
        self.templates.env.globals["perms"] = _PERMS

    # -- plumbing ---------------------------------------------------------------------------------------
    async def call(self, awaitable: Awaitable[Any]) -> Any:
        """One Admin call, bounded in time (a paused broker must not hang a page)."""
        return await asyncio.wait_for(awaitable, REQUEST_TIMEOUT_S)

    def render(self, request: Request, template: str, status: int = 200, **context: Any) -> Response:
        context.setdefault("error", request.query_params.get("error"))
        context.setdefault("notice", request.query_params.get("notice"))
        context["namesrv_addr"] = self.namesrv_addr
        return self.templates.TemplateResponse(request, template, context, status_code=status)

    def page(
        self, template: str, build: Callable[[Request], Awaitable[dict[str, Any]]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            try:
                return self.render(request, template, **await build(request))
            except (RocketQError, OSError, TimeoutError, FormError, ValueError) as exc:
                log.info("%s: %s", request.url.path, exc)
                return self.render(request, "error.html", status=502, error=_problem(exc))
            except Exception as exc:  # a bug: the traceback goes to the log, the page gets one line
                log.exception("%s failed", request.url.path)
                return self.render(
                    request, "error.html", status=500, error=f"internal error: {type(exc).__name__}: {exc}"
                )

        return handler

    def action(
        self, act: Callable[[Request, dict[str, str]], Awaitable[str]], back: Callable[[Request], str]
    ) -> Callable[[Request], Awaitable[Response]]:
        """A form post: `act` returns where to go with its notice; a failure goes back with the banner."""

        async def handler(request: Request) -> Response:
            form = {
                k: v[0].strip()
                for k, v in parse_qs((await request.body()).decode("utf-8", "replace")).items()
            }
            try:
                target = await act(request, form)
            except (RocketQError, OSError, TimeoutError, FormError, ValueError) as exc:
                log.info("%s: %s", request.url.path, exc)
                return RedirectResponse(_with(back(request), error=_problem(exc)), status_code=303)
            except Exception as exc:  # a bug: the traceback goes to the log, the page gets one line
                log.exception("%s failed", request.url.path)
                return RedirectResponse(
                    _with(back(request), error=f"internal error: {type(exc).__name__}: {exc}"),
                    status_code=303,
                )
            return RedirectResponse(target, status_code=303)

        return handler

    async def masters(self) -> list[tuple[str, str, str]]:
        """(cluster, broker name, master address) of every broker with a master."""
        info = await self.call(self.admin.cluster_info())
        out = []
        for cluster, names in sorted(info.cluster_addr_table.items()):
            for name in sorted(names):
                data = info.broker_addr_table.get(name)
                if data is not None and data.master_addr:
                    out.append((cluster, name, data.master_addr))
        return out

    async def groups(self) -> list[str]:
        names: set[str] = set()
        for _, _, addr in await self.masters():
            names.update(await self.call(self.admin.subscription_groups(addr)))
        return sorted(names)

    async def sample(self) -> None:
        """History: TPS per broker, lag per group (the charts of the last hour)."""
        now = time.time()
        for _, name, addr in await self.masters():
            status = await self.call(self.admin.broker_status(addr))
            self.history.add(f"put:{name}", float(status.get("putTps", 0) or 0), now)
            self.history.add(f"get:{name}", float(status.get("getTotalTps", 0) or 0), now)
        for group in (await self.groups())[:50]:
            with contextlib.suppress(RocketQError, TimeoutError):
                progress = await self.call(self.admin.consumer_progress(group))
                self.history.add(f"lag:{group}", float(sum(p.lag for p in progress)), now)

    async def send_producer(self) -> Producer:
        if self.producer is None:
            producer = Producer(
                DASHBOARD_PRODUCER_GROUP, namesrv_addr=self.namesrv_addr, enable_msg_trace=True, **self.client
            )
            await self.call(producer.start())
            self.producer = producer
        return self.producer

    # -- cluster ------------------------------------------------------------------------------------------
    async def cluster(self, request: Request) -> dict[str, Any]:
        info = await self.call(self.admin.cluster_info())
        brokers = []
        for cluster, names in sorted(info.cluster_addr_table.items()):
            for name in sorted(names):
                data = info.broker_addr_table.get(name)
                for broker_id, addr in sorted((data.broker_addrs if data else {}).items()):
                    try:
                        status = await self.call(self.admin.broker_status(addr))
                    except (RocketQError, OSError, TimeoutError) as exc:
                        status = {"unreachable": _problem(exc)}
                    brokers.append({"cluster": cluster, "name": name, "id": broker_id, "addr": addr,
                                    "role": "master" if broker_id == 0 else "slave", "status": status})  # fmt: skip
        names = sorted({b["name"] for b in brokers})
        chart = self.history.svg([f"put:{n}" for n in names] + [f"get:{n}" for n in names])
        return {"brokers": brokers, "tps_chart": chart}

    # -- topics -------------------------------------------------------------------------------------------
    async def topics(self, request: Request) -> dict[str, Any]:
        topics = await self.call(self.admin.topic_list())
        show_system = request.query_params.get("system") == "1"
        shown = [t for t in topics if show_system or not _system_topic(t)]
        return {
            "topics": shown,
            "hidden": len(topics) - len(shown),
            "clusters": sorted({c for c, _, _ in await self.masters()}),
        }

    async def topic(self, request: Request) -> dict[str, Any]:
        topic = request.path_params["topic"]
        route = await self.call(self.admin.topic_route(topic))
        status = await self.call(self.admin.topic_status(topic))
        queues = [{"mq": mq, "min": o.min_offset, "max": o.max_offset, "last": o.last_update_timestamp}
                  for mq, o in sorted(status.items())]  # fmt: skip
        return {
            "topic": topic,
            "route": route,
            "queues": queues,
            "total": sum(q["max"] - q["min"] for q in queues),
        }

    async def create_topic(self, request: Request, form: dict[str, str]) -> str:
        topic = _topic_name(form.get("topic", ""))
        await self._put_topic(topic, form)
        return _with(f"/topics/{quote(topic)}", notice=f"topic {topic} created")

    async def update_topic(self, request: Request, form: dict[str, str]) -> str:
        topic = _topic_name(request.path_params["topic"])
        await self._put_topic(topic, form)
        return _with(f"/topics/{quote(topic)}", notice=f"topic {topic} updated")

    async def _put_topic(self, topic: str, form: dict[str, str]) -> None:
        read, write = _int(form, "read_queues", 4, 1, 1024), _int(form, "write_queues", 4, 1, 1024)
        perm = _int(form, "perm", 6, 0, 7)
        await self.call(
            self.admin.create_topic(topic, form.get("cluster") or C.DEFAULT_CLUSTER, read, write, perm=perm)
        )

    async def delete_topic(self, request: Request, form: dict[str, str]) -> str:
        topic = _topic_name(request.path_params["topic"])
        for cluster in sorted({c for c, _, _ in await self.masters()}):
            await self.call(self.admin.delete_topic(topic, cluster))
        return _with("/topics", notice=f"topic {topic} deleted")

    async def send_message(self, request: Request, form: dict[str, str]) -> str:
        topic = _topic_name(request.path_params["topic"])
        producer = await self.send_producer()
        msg = Message(
            topic, form.get("body", "").encode(), tags=form.get("tags") or None, keys=form.get("keys") or None
        )
        result = await self.call(producer.send(msg))
        target = f"/message?{urlencode({'topic': topic, 'uniq': result.msg_id})}"
        return _with(target, notice=f"sent: {result.status.name}, message id {result.msg_id}")

    # -- consumer groups ------------------------------------------------------------------------------
    async def groups_page(self, request: Request) -> dict[str, Any]:
        rows = []
        for group in await self.groups():
            if group == BROWSE_GROUP:
                continue
            lag: int | str
            try:
                lag = sum(p.lag for p in await self.call(self.admin.consumer_progress(group)))
            except (RocketQError, TimeoutError):
                lag = "-"
            rows.append({"group": group, "lag": lag})
        return {"groups": rows}

    async def group(self, request: Request) -> dict[str, Any]:
        group = request.path_params["group"]
        progress = await self.call(self.admin.consumer_progress(group))
        connection, running, offline = None, {}, None
        try:
            connection = await self.call(self.admin.consumer_connections(group))
        except RocketQError as exc:  # CONSUMER_NOT_ONLINE: a group with no member is normal, not an error
            offline = _problem(exc)
        if connection is not None:
            for conn in connection.connection_set[:10]:
                try:
                    running[conn.client_id] = await self.call(
                        self.admin.consumer_running_info(group, conn.client_id)
                    )
                except (RocketQError, TimeoutError) as exc:
                    running[conn.client_id] = _problem(exc)
        topics = sorted({p.queue.topic for p in progress})
        return {"group": group, "progress": progress, "total_lag": sum(p.lag for p in progress), "topics": topics,
                "connection": connection, "running": running, "offline": offline,
                "lag_chart": self.history.svg([f"lag:{group}"])}  # fmt: skip

    async def reset_offset(self, request: Request, form: dict[str, str]) -> str:
        group = _group_name(request.path_params["group"])
        topic = _topic_name(form.get("topic", ""))
        when = _timestamp(form.get("timestamp", ""))
        offsets = await self.call(self.admin.reset_offset_by_time(group, topic, when))
        point = _fmt_ms(when) if when > 0 else "the first message"
        return _with(
            f"/groups/{quote(group)}",
            notice=f"offsets of {group} on {topic} reset to {point}: {len(offsets)} queue(s)",
        )

    async def skip_backlog(self, request: Request, form: dict[str, str]) -> str:
        group = _group_name(request.path_params["group"])
        now = int(time.time() * 1000)
        topics = sorted({p.queue.topic for p in await self.call(self.admin.consumer_progress(group))})
        for topic in topics:
            await self.call(self.admin.reset_offset_by_time(group, topic, now))
        return _with(
            f"/groups/{quote(group)}", notice=f"backlog of {group} skipped on {len(topics)} topic(s)"
        )

    async def delete_group(self, request: Request, form: dict[str, str]) -> str:
        group = _group_name(request.path_params["group"])
        for cluster in sorted({c for c, _, _ in await self.masters()}):
            await self.call(
                self.admin.delete_subscription_group(
                    group, cluster, remove_offset=form.get("remove_offset") == "on"
                )
            )
        return _with("/groups", notice=f"group {group} deleted")

    # -- producers ------------------------------------------------------------------------------------------
    async def producers(self, request: Request) -> dict[str, Any]:
        group, topic = request.query_params.get("group", ""), request.query_params.get("topic", "")
        connection = None
        if group and topic:
            _group_name(group)
            connection = await self.call(self.admin.producer_connections(group, _topic_name(topic)))
        return {"group": group, "topic": topic, "connection": connection}

    # -- messages ---------------------------------------------------------------------------------------------
    async def messages(self, request: Request) -> dict[str, Any]:
        q = request.query_params
        topic, key, msg_id, uniq = q.get("topic", ""), q.get("key", ""), q.get("id", ""), q.get("uniq", "")
        found = None
        if msg_id:
            found = [await self.call(self.admin.query_message_by_id(msg_id.strip()))]
        elif topic and key:
            found = await self.call(self.admin.query_message_by_key(_topic_name(topic), key, 64))
        elif topic and uniq:
            found = await self.call(self.admin.query_message_by_unique_key(_topic_name(topic), uniq.strip()))
        elif topic and q.get("begin"):
            begin = _timestamp(q["begin"])
            end = _timestamp(q["end"]) if q.get("end") else int(time.time() * 1000)
            found = await self.browse(_topic_name(topic), begin, end)
        return {"topic": topic, "key": key, "id": msg_id, "uniq": uniq, "found": found,
                "begin": q.get("begin", ""), "end": q.get("end", "")}  # fmt: skip

    async def browse(self, topic: str, begin_ms: int, end_ms: int) -> list[MessageExt]:
        """Messages of `topic` stored between two times (rocketmq-dashboard's queryMessageByTopic): a lite
        pull consumer starts each queue at `begin_ms` and reads until `end_ms`, committing nothing."""
        consumer = LitePullConsumer(
            BROWSE_GROUP, namesrv_addr=self.namesrv_addr, auto_commit=False,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, consume_timestamp_ms=begin_ms, **self.client,
        )  # fmt: skip
        found: list[MessageExt] = []
        async with consumer:
            queues = await self.call(consumer.fetch_message_queues(topic))
            status = await self.call(self.admin.topic_status(topic))
            consumer.assign(queues)
            deadline = time.monotonic() + BROWSE_TIME_S
            done: set[MessageQueue] = set()
            while len(found) < BROWSE_MAX and len(done) < len(queues) and time.monotonic() < deadline:
                for msg in await consumer.poll(timeout_ms=200):
                    mq = MessageQueue(topic, msg.broker_name or "", msg.queue_id)
                    if msg.store_timestamp > end_ms:
                        done.add(mq)
                    elif msg.store_timestamp >= begin_ms:
                        found.append(msg)
                    offsets = status.get(mq)
                    if offsets is not None and msg.queue_offset + 1 >= offsets.max_offset:
                        done.add(mq)
                done |= {mq for mq in queues if (o := status.get(mq)) is not None and o.max_offset == 0}
        return sorted(found, key=lambda m: m.store_timestamp)[:BROWSE_MAX]

    async def message(self, request: Request) -> dict[str, Any]:
        q = request.query_params
        if q.get("id"):
            msg = await self.call(self.admin.query_message_by_id(q["id"].strip()))
        elif not q.get("uniq", "").strip():
            raise FormError("give an offset message id, or a topic and a message id")
        else:
            found = await self.call(
                self.admin.query_message_by_unique_key(
                    _topic_name(q.get("topic", "")), q.get("uniq", "").strip()
                )
            )
            if not found:
                raise FormError(f"no message {q.get('uniq')!r} in topic {q.get('topic')!r} (yet)")
            msg = found[0]
        trace = await self.call(
            query_msg_trace_by_id(self.admin, msg.msg_id, q.get("trace_topic") or C.RMQ_SYS_TRACE_TOPIC)
        )
        body = msg.body.decode("utf-8", errors="replace")
        return {"msg": msg, "body": body, "trace": trace, "properties": sorted(msg.properties.items())}

    async def trace(self, request: Request) -> dict[str, Any]:
        msg_id = request.query_params.get("id", "").strip()
        topic = request.query_params.get("trace_topic") or C.RMQ_SYS_TRACE_TOPIC
        views = await self.call(query_msg_trace_by_id(self.admin, msg_id, topic)) if msg_id else None
        return {"id": msg_id, "trace_topic": topic, "trace": views}

    async def resend(self, request: Request, form: dict[str, str]) -> str:
        group, client_id, msg_id = (
            _group_name(form.get("group", "")),
            form.get("client_id", ""),
            form.get("msg_id", ""),
        )
        result = await self.call(self.admin.consume_message_directly(group, client_id, msg_id))
        status = result.consume_result.name if result.consume_result is not None else "?"
        return _with(
            f"/message?{urlencode({'id': msg_id})}",
            notice=f"consumed by {client_id}: {status} {result.remark or ''}",
        )

    async def close(self) -> None:
        await self.history.stop()
        if self.producer is not None:
            await self.producer.shutdown()
        await self.admin.shutdown()


# -- form checks (as the broker checks: TopicValidator, the group name rules) ------------------------------
def _topic_name(name: str) -> str:
    problem = C.topic_name_problem(name)
    if problem is not None:
        raise FormError(problem)
    return name


def _group_name(name: str) -> str:
    problem = C.group_name_problem(name)
    if problem is not None:
        raise FormError(problem)
    return name


def _int(form: dict[str, str], key: str, default: int, low: int, high: int) -> int:
    raw = form.get(key) or str(default)
    try:
        value = int(raw)
    except ValueError:
        raise FormError(f"{key.replace('_', ' ')}: {raw!r} is not a number") from None
    if not low <= value <= high:
        raise FormError(f"{key.replace('_', ' ')}: {value} is outside {low}..{high}")
    return value


def _timestamp(text: str) -> int:
    """`now`, epoch ms, or the datetime-local form value (YYYY-MM-DDTHH:MM[:SS]), local time."""
    text = text.strip()
    if text in ("", "now"):
        return int(time.time() * 1000)
    if text.isdigit():
        return int(text)
    for fmt in ("%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"):
        try:
            return int(dt.datetime.strptime(text, fmt).timestamp() * 1000)
        except ValueError:
            continue
    raise FormError(f"not a time: {text!r} (use now, epoch ms, or YYYY-MM-DD HH:MM:SS)")


def _system_topic(topic: str) -> bool:
    """Hidden from the topic list unless asked for (rocketmq-dashboard's "system topic" filter)."""
    return C.is_system_topic(topic) or topic.startswith(
        (C.RETRY_GROUP_TOPIC_PREFIX, C.DLQ_GROUP_TOPIC_PREFIX)
    )


def _problem(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {REQUEST_TIMEOUT_S:.0f} s: is the cluster up?"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, FormError) else text


def _with(url: str, **params: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{urlencode(params)}"


def create_app(
    namesrv_addr: str,
    *,
    sample: bool = True,
    users: Mapping[str, str] | None = None,
    client: Mapping[str, Any] | None = None,
) -> Starlette:
    """The ASGI application; `sample=False` leaves the history charts empty (no background sampling).

    `users` (name -> password) turns the login on (rocketq.dashboard.login); `client` holds the ACL
    credentials and TLS settings of the dashboard's own clients.
    """
    d = Dashboard(namesrv_addr, client)
    d.templates.env.globals["login_enabled"] = users is not None

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        if sample:
            await d.history.start(d.sample)
        try:
            yield
        finally:
            await d.close()

    def topic_page(request: Request) -> str:
        return f"/topics/{quote(request.path_params['topic'])}"

    def group_page(request: Request) -> str:
        return f"/groups/{quote(request.path_params['group'])}"

    routes = [
        Route("/", d.page("cluster.html", d.cluster)),
        Route("/topics", d.page("topics.html", d.topics)),
        Route("/topics", d.action(d.create_topic, lambda r: "/topics"), methods=["POST"]),
        Route("/topics/{topic}", d.page("topic.html", d.topic)),
        Route("/topics/{topic}/update", d.action(d.update_topic, topic_page), methods=["POST"]),
        Route("/topics/{topic}/delete", d.action(d.delete_topic, topic_page), methods=["POST"]),
        Route("/topics/{topic}/send", d.action(d.send_message, topic_page), methods=["POST"]),
        Route("/groups", d.page("groups.html", d.groups_page)),
        Route("/groups/{group}", d.page("group.html", d.group)),
        Route("/groups/{group}/reset", d.action(d.reset_offset, group_page), methods=["POST"]),
        Route("/groups/{group}/skip", d.action(d.skip_backlog, group_page), methods=["POST"]),
        Route("/groups/{group}/delete", d.action(d.delete_group, group_page), methods=["POST"]),
        Route("/producers", d.page("producers.html", d.producers)),
        Route("/messages", d.page("messages.html", d.messages)),
        Route("/message", d.page("message.html", d.message)),
        Route("/message/resend", d.action(d.resend, lambda r: "/messages"), methods=["POST"]),
        Route("/trace", d.page("trace.html", d.trace)),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    middleware = []
    if users is not None:
        sessions = Sessions(users)
        form, submit, logout = login_routes(sessions, d.render)
        routes += [Route("/login", form), Route("/login", submit, methods=["POST"]), Route("/logout", logout)]
        middleware.append(Middleware(LoginRequired, sessions=sessions))
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware)
    app.state.dashboard = d
    return app
