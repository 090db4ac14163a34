"""rocketq dashboard: a web application to watch and manage a cluster, as apache/rocketmq-dashboard.

A client of the cluster like any other: everything it shows or changes goes through rocketq.client
(Admin, Producer), never through the broker's or the NameServer's code. Server-rendered pages
(Starlette + Jinja2 with autoescaping, served by uvicorn); every asset ships in this package, so the
pages work with no internet access. Run it with `rocketq dashboard --namesrv-addr ADDR`
(docs/observability.md).
"""

from rocketq.dashboard.app import create_app

__all__ = ["create_app"]
