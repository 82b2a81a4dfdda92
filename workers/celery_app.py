"""The Celery app of a worker: ``celery -A workers.celery_app worker`` (or ``council worker``).

Built from the environment's settings at import. Everything else imports
:func:`workers.app.celery_config.create_app` instead, so that no settings are read at import.
"""

from __future__ import annotations

from workers.app.celery_config import create_app

app = create_app()
