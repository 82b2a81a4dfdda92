"""The Celery app and the process: settings, tasks, logging, metrics, the shared services."""
