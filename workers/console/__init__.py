"""``council console``: a small web application to watch the council and answer it.

* :mod:`workers.console.command`: the click command (token, Redis, uvicorn).
* :mod:`workers.console.app`: the Starlette application, its pages and live streams.
* :mod:`workers.console.security`: the token, the session cookie, CSRF, the headers.
* :mod:`workers.console.views`: what a page shows, read from the stores.
* :mod:`workers.console.registry`: the component registry, ``component_id`` → template.
* :mod:`workers.console.answering`: answering an ask, as ``council answer`` does.

Templates (Jinja2, autoescaped) are in ``templates/``, the stylesheet and the one
script in ``static/``: no JavaScript build step. Source: docs/evidence-and-asks.md §2.
"""
