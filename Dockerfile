# The council worker image (deploy/compose/compose.yaml builds it; deploy/k8s/ runs it).
#
#   docker build -t council:local .
#   docker run --rm --env-file deploy/compose/council.env \
#     -e COUNCIL_REDIS_URL=redis://HOST:6379/0 council:local worker --queues openai
#
# Only the files named by COPY are sent to the builder (BuildKit, the default builder
# since Docker 23, transfers what the Dockerfile uses), so the local .venv stays out.
FROM python:3.11-slim-bookworm

# tini is PID 1: it reaps the reviewer programs' orphans and forwards SIGTERM to the
# worker alone (no -g), so a stop is celery's warm shutdown and the reviewer programs of
# running reviews are not killed with it. bubblewrap: a distributed worker runs reviewer
# programs (command, sarif) only inside its sandbox, and fails them without it (docs/security.md,
# "Sandbox"; the container must also let it create namespaces: see compose.yaml).
# git: for command reviewers that call it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini bubblewrap git \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/council
COPY pyproject.toml README.md ./
COPY council ./council
COPY workers ./workers
# [analyzers]: ruff and bandit, for the sarif reviewers of examples/council.toml.
RUN pip install --no-cache-dir '.[analyzers]'

# A numeric non-root user (Kubernetes' runAsNonRoot can check a number, not a name).
# HOME and the run trees live in /tmp: the root filesystem can be mounted read-only.
USER 10001:10001
ENV HOME=/tmp \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
EXPOSE 9464
ENTRYPOINT ["/usr/bin/tini", "--", "council"]
CMD ["worker"]
