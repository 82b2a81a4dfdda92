"""The deployment recipes (deploy/k8s, deploy/compose, deploy/systemd, Dockerfile), checked
offline: nothing here can pull an image or reach a cluster, so the recipes are validated,
not run.

* Kubernetes objects: the Kubernetes API's JSON schemas shipped by ``kubernetes-validate``
  (strict: an unknown field is an error, as ``kubectl apply``'s field validation makes it),
  for the oldest and the newest version the recipes claim.
* KEDA ScaledObject / TriggerAuthentication and prometheus-operator ServiceMonitor: no
  package on PyPI or npm ships those CRDs' JSON schemas, so ``tests/deploy_schemas/``
  holds the subset of their openAPIV3Schema the manifests use; each file names the
  upstream CRD version it follows and how it was checked against it.
* The Compose file: the Compose specification's schema as vendored by ``check-jsonschema``.
* Then each recipe is read back for the settings the README explains: the queues, the
  grace periods against the default backstop, AOF / noeviction, the scale-in guard.

No test reaches the network (an autouse fixture refuses every connection).
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import socket
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from celery import Celery
from kombu import Connection

from council.model.participant import Clocks
from workers.app.celery_config import ALL_QUEUES, CONSOLIDATE_QUEUE, celery_config
from workers.app.settings import Settings
from workers.cli.worker import _queue_names, worker_command
from workers.execution.unpacked_trees import KEEP_RUNS

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
COMPOSE = ROOT / "deploy" / "compose"
SCHEMAS = ROOT / "tests" / "deploy_schemas"

K8S_VERSIONS = ("1.29", "1.37")
"""The oldest Kubernetes the manifests claim, and the newest kubernetes-validate ships."""

BACKSTOP_S = Clocks().backstop_ms // 1000
"""The roster's default backstop (45 min): the longest a review runs unless a roster
raises ``[council] backstop_ms``."""

METRICS_PORT = 9464

CRD_SCHEMAS = {
    ("keda.sh/v1alpha1", "ScaledObject"): "keda-scaledobject-v1alpha1.json",
    ("keda.sh/v1alpha1", "TriggerAuthentication"): "keda-triggerauthentication-v1alpha1.json",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "servicemonitor-v1.json",
}


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse every connection: a validator that tried to fetch a schema fails loudly."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a deploy test tried to reach the network: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


# --- reading the recipes -------------------------------------------------------------


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def _k8s_files() -> list[Path]:
    return sorted(K8S.glob("*.yaml"))


def _k8s_documents() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in _k8s_files():
        for doc in _documents(path):
            yield path.name, doc


def _doc_id(item: tuple[str, dict[str, Any]]) -> str:
    name, doc = item
    return f"{name}:{doc['kind']}/{doc['metadata']['name']}"


ALL_K8S = list(_k8s_documents())
CORE_K8S = [(f, d) for f, d in ALL_K8S if (d["apiVersion"], d["kind"]) not in CRD_SCHEMAS]
CRD_K8S = [(f, d) for f, d in ALL_K8S if (d["apiVersion"], d["kind"]) in CRD_SCHEMAS]


def _of_kind(kind: str, file: str | None = None) -> list[dict[str, Any]]:
    return [d for f, d in ALL_K8S if d["kind"] == kind and (file is None or f == file)]


def _by_name(kind: str, name: str, file: str | None = None) -> dict[str, Any]:
    found = [d for d in _of_kind(kind, file) if d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def _crd_schema(doc: dict[str, Any]) -> dict[str, Any]:
    name = CRD_SCHEMAS[(doc["apiVersion"], doc["kind"])]
    schema: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return schema


def _crd_validate(doc: dict[str, Any]) -> None:
    schema = _crd_schema(doc)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(doc)


def _compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((COMPOSE / "compose.yaml").read_text(encoding="utf-8"))
    return doc


def _compose_schema() -> dict[str, Any]:
    vendor = resources.files("check_jsonschema.builtin_schemas.vendor")
    schema: dict[str, Any] = json.loads(vendor.joinpath("compose-spec.json").read_text("utf-8"))
    return schema


def _compose_validate(doc: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(
        _compose_schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    validator.validate(doc)


def _flag(args: list[str], name: str) -> str:
    """The value after ``name`` in an argument list (``--queues openai``)."""
    assert args.count(name) == 1, f"{name} given {args.count(name)} times in {args}"
    return args[args.index(name) + 1]


def _duration_s(text: str) -> int:
    """A Compose duration (``50m``, ``1h30m``, ``90s``) in seconds."""
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    assert parts is not None and text, f"not a duration: {text!r}"
    h, m, s = (int(p or 0) for p in parts.groups())
    return h * 3600 + m * 60 + s


def _worker_deployments() -> list[dict[str, Any]]:
    return [d for d in _of_kind("Deployment") if d["metadata"]["name"].startswith("council-")]


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


# --- Kubernetes: the published schemas -----------------------------------------------


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("item", CORE_K8S, ids=_doc_id)
def test_kubernetes_objects_match_the_api_schema(
    item: tuple[str, dict[str, Any]], version: str
) -> None:
    _, doc = item
    assert kubernetes_validate.validate(doc, version, strict=True) == version


@pytest.mark.parametrize("item", CRD_K8S, ids=_doc_id)
def test_custom_resources_match_their_crd_schema(item: tuple[str, dict[str, Any]]) -> None:
    _, doc = item
    _crd_validate(doc)


def test_every_manifest_is_validated_by_something() -> None:
    """No kind slips past: kubernetes-validate knows it, or tests/deploy_schemas does."""
    for _, doc in CORE_K8S:
        kubernetes_validate.validate(doc, K8S_VERSIONS[-1], strict=True)
    kinds = {(d["apiVersion"], d["kind"]) for _, d in CRD_K8S}
    assert kinds == set(CRD_SCHEMAS)
    assert len(ALL_K8S) == len(CORE_K8S) + len(CRD_K8S)


@pytest.mark.parametrize("name", sorted(set(CRD_SCHEMAS.values())))
def test_crd_subsets_are_schemas_naming_their_upstream_version(name: str) -> None:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert re.search(r"\bv\d+\.\d+\.\d+'s CRD [a-z.]+\b", schema["$comment"])
    assert schema["additionalProperties"] is False


# --- a broken manifest is rejected ----------------------------------------------------


def _broken(doc: dict[str, Any], path: list[str | int], value: Any) -> dict[str, Any]:
    broken = copy.deepcopy(doc)
    node: Any = broken
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return broken


def test_a_deployment_with_replicas_two_is_rejected() -> None:
    deployment = _worker_deployments()[0]
    broken = _broken(deployment, ["spec", "replicas"], "two")
    with pytest.raises(kubernetes_validate.ValidationError, match="'two' is not of type"):
        kubernetes_validate.validate(broken, K8S_VERSIONS[-1], strict=True)


def test_a_misspelled_pod_field_is_rejected() -> None:
    deployment = _worker_deployments()[0]
    broken = copy.deepcopy(deployment)
    pod = broken["spec"]["template"]["spec"]
    pod["terminationGracePeriodSecond"] = pod.pop("terminationGracePeriodSeconds")
    with pytest.raises(kubernetes_validate.ValidationError, match="terminationGracePeriodSecond"):
        kubernetes_validate.validate(broken, K8S_VERSIONS[-1], strict=True)


def test_a_broken_scaled_object_is_rejected() -> None:
    scaled = _of_kind("ScaledObject")[0]
    trigger = ["spec", "triggers", 0, "metadata", "listLength"]
    # KEDA's trigger metadata is a map of strings: listLength: 1 (a number) is refused.
    with pytest.raises(jsonschema.ValidationError, match="is not of type 'string'"):
        _crd_validate(_broken(scaled, trigger, 1))
    # The HPA caps a stabilization window at one hour.
    window = [
        "spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown",
        "stabilizationWindowSeconds",
    ]  # fmt: skip
    with pytest.raises(jsonschema.ValidationError, match="greater than the maximum"):
        _crd_validate(_broken(scaled, window, 7200))
    with pytest.raises(jsonschema.ValidationError, match="'listname' was unexpected"):
        misspelled = copy.deepcopy(scaled)
        misspelled["spec"]["triggers"][0]["listname"] = "council.openai"
        _crd_validate(misspelled)


def test_a_broken_service_monitor_is_rejected() -> None:
    monitor = _of_kind("ServiceMonitor")[0]
    with pytest.raises(jsonschema.ValidationError, match="does not match"):
        _crd_validate(_broken(monitor, ["spec", "endpoints", 0, "interval"], "30 seconds"))
    with pytest.raises(jsonschema.ValidationError, match="'endpoints' is a required"):
        no_endpoints = copy.deepcopy(monitor)
        del no_endpoints["spec"]["endpoints"]
        _crd_validate(no_endpoints)


def test_a_broken_compose_file_is_rejected() -> None:
    compose = _compose()
    misspelled = copy.deepcopy(compose)
    misspelled["services"]["redis"]["stop_grace_perod"] = "2m"
    with pytest.raises(jsonschema.ValidationError, match="stop_grace_perod"):
        _compose_validate(misspelled)
    condition = ["services", "worker-openai", "depends_on", "redis", "condition"]
    with pytest.raises(jsonschema.ValidationError) as refused:
        _compose_validate(_broken(compose, condition, "service_ready"))
    assert list(refused.value.absolute_path) == condition[:-2]


# --- Kubernetes: read back -------------------------------------------------------------


def _assert_metrics_served_to_others(params: dict[str, Any]) -> None:
    """``council worker``'s own flags only (nothing left for celery), and the metrics port
    bound on every interface: the default, 127.0.0.1, is out of reach of Prometheus in
    another container and of the kubelet's probes."""
    assert params["celery_args"] == ()
    assert params["metrics_port"] == METRICS_PORT
    assert params["metrics_host"] == "0.0.0.0"


def test_worker_deployments_cover_every_queue_with_the_real_cli_syntax() -> None:
    consumed: dict[str, set[str]] = {}
    for deployment in _worker_deployments():
        args = _container(deployment)["args"]
        assert args[0] == "worker"
        # The arguments parse as `council worker` parses them (the image's entrypoint).
        ctx = worker_command.make_context("worker", list(args[1:]))
        queues = set(_queue_names(ctx.params["queues"]).split(","))
        consumed[deployment["metadata"]["name"]] = queues
        _assert_metrics_served_to_others(ctx.params)
    assert consumed == {
        "council-worker-openai": {"council.openai"},
        "council-worker-anthropic": {"council.anthropic"},
        "council-worker-default": {"council.default", CONSOLIDATE_QUEUE},
    }
    assert set().union(*consumed.values()) == set(ALL_QUEUES)


def test_worker_pods_drain_for_longer_than_the_backstop() -> None:
    for deployment in _worker_deployments():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["terminationGracePeriodSeconds"] > BACKSTOP_S
        # SIGTERM is the drain: a preStop hook would only eat into the grace period.
        assert "lifecycle" not in _container(deployment)
        # KEDA owns the count: a replicas field would reset it on every apply.
        assert "replicas" not in deployment["spec"]
        assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_worker_pods_run_locked_down() -> None:
    for deployment in _worker_deployments():
        pod = deployment["spec"]["template"]["spec"]
        container = _container(deployment)
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == 10001  # the Dockerfile's USER
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod["automountServiceAccountToken"] is False
        sc = container["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert {m["mountPath"] for m in container["volumeMounts"]} >= {"/tmp"}
        # The unpacked run trees a worker keeps, plus one being unpacked, fit in /tmp: an
        # emptyDir over its sizeLimit gets the pod evicted, running reviews and all.
        (tmp,) = [v for v in pod["volumes"] if v["name"] == "tmp"]
        trees = (KEEP_RUNS + 1) * Settings().max_unpacked_tree_bytes
        assert _bytes(tmp["emptyDir"]["sizeLimit"]) >= trees
        resources_ = container["resources"]
        assert {"cpu", "memory"} <= set(resources_["requests"])
        assert "memory" in resources_["limits"]
        assert container["ports"] == [
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}
        ]


def test_worker_secrets_come_from_secrets_only() -> None:
    keys = {}
    for deployment in _worker_deployments():
        env = {e["name"]: e for e in _container(deployment)["env"]}
        assert env["COUNCIL_REDIS_URL"]["valueFrom"]["secretKeyRef"] == {
            "name": "council-redis",
            "key": "url",
        }
        for name, entry in env.items():
            assert "value" not in entry, f"{name} is written into the manifest"
        keys[deployment["metadata"]["name"]] = {n for n in env if n.endswith("_API_KEY")}
    # Each provider's worker holds its own key only.
    assert keys == {
        "council-worker-openai": {"OPENAI_API_KEY"},
        "council-worker-anthropic": {"ANTHROPIC_API_KEY"},
        "council-worker-default": set(),
    }


def test_visibility_timeout_is_twice_the_backstop() -> None:
    config = _by_name("ConfigMap", "council-config")
    assert int(config["data"]["COUNCIL_VISIBILITY_TIMEOUT_S"]) >= 2 * BACKSTOP_S
    for deployment in _worker_deployments():
        refs = [e["configMapRef"]["name"] for e in _container(deployment)["envFrom"]]
        assert refs == ["council-config"]


def test_each_scaled_object_reads_its_deployments_queue_lists() -> None:
    scaled = {s["spec"]["scaleTargetRef"]["name"]: s for s in _of_kind("ScaledObject")}
    deployments = {d["metadata"]["name"]: d for d in _worker_deployments()}
    assert set(scaled) == set(deployments)
    for name, obj in scaled.items():
        args = _container(deployments[name])["args"]
        queues = set(_queue_names(_flag(args, "--queues")).split(","))
        triggers = obj["spec"]["triggers"]
        assert {t["type"] for t in triggers} == {"redis"}
        # kombu keeps a queue as a Redis list named as the queue.
        assert {t["metadata"]["listName"] for t in triggers} == queues
        for trigger in triggers:
            assert trigger["authenticationRef"] == {"name": "council-redis"}
            assert "enableTLS" not in trigger["metadata"]  # TLS: the TriggerAuthentication
            assert int(trigger["metadata"]["listLength"]) >= 1


def test_scale_in_waits_for_running_reviews() -> None:
    for obj in _of_kind("ScaledObject"):
        spec = obj["spec"]
        behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
        assert behavior["scaleDown"]["stabilizationWindowSeconds"] >= BACKSTOP_S
        assert spec["cooldownPeriod"] >= BACKSTOP_S
        assert spec["minReplicaCount"] >= 1
        assert spec["advanced"]["restoreToOriginalReplicaCount"] is False
    consolidating = _by_name("ScaledObject", "council-worker-default")
    assert consolidating["spec"]["minReplicaCount"] >= 1


def test_each_worker_deployment_has_a_disruption_budget() -> None:
    budgets = _of_kind("PodDisruptionBudget")
    for deployment in _worker_deployments():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        matching = [
            b for b in budgets if b["spec"]["selector"]["matchLabels"].items() <= labels.items()
        ]
        assert len(matching) == 1, deployment["metadata"]["name"]
        assert matching[0]["spec"] == {
            "maxUnavailable": 1,
            "selector": deployment["spec"]["selector"],
        }


def test_the_service_monitor_scrapes_the_workers_metrics_port() -> None:
    service = _by_name("Service", "council-worker-metrics")
    monitor = _by_name("ServiceMonitor", "council-worker")
    selected = monitor["spec"]["selector"]["matchLabels"]
    assert selected.items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["council"]}
    (endpoint,) = monitor["spec"]["endpoints"]
    (port,) = service["spec"]["ports"]
    assert endpoint["port"] == port["name"] == "metrics"
    assert port["port"] == METRICS_PORT and port["targetPort"] == "metrics"
    for deployment in _worker_deployments():
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= pod_labels.items()


def test_the_redis_statefulset_keeps_every_write() -> None:
    statefulset = _by_name("StatefulSet", "council-redis")
    conf = _by_name("ConfigMap", "council-redis-config")["data"]["redis.conf"]
    settings = dict(
        line.split(None, 1) for line in conf.splitlines() if line and not line.startswith("#")
    )
    assert settings["appendonly"] == "yes"
    assert settings["appendfsync"] == "everysec"
    assert settings["maxmemory-policy"] == "noeviction"
    assert settings["dir"] == "/data"
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    assert container["args"][:2] == ["redis-server", "/etc/redis/redis.conf"]
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/data", "/etc/redis"}
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "data"
    # maxmemory leaves room under the limit for the copy-on-write pages of an AOF rewrite.
    limit = _bytes(container["resources"]["limits"]["memory"])
    assert _bytes(settings["maxmemory"]) * 3 // 2 <= limit
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


def _bytes(text: str) -> int:
    units = {"gb": 10**9, "mb": 10**6, "Gi": 2**30, "Mi": 2**20}
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(text[: -len(unit)]) * factor
    return int(text)


def test_both_redis_options_give_the_workers_and_keda_the_same_names() -> None:
    for file in ("redis-statefulset.yaml", "redis-external.yaml"):
        secret = _by_name("Secret", "council-redis", file)
        auth = _by_name("TriggerAuthentication", "council-redis", file)
        assert "url" in secret["stringData"]
        for ref in auth["spec"]["secretTargetRef"]:
            assert ref["name"] == "council-redis"
            assert ref["key"] in secret["stringData"], f"{file}: {ref['key']}"
        assert {r["parameter"] for r in auth["spec"]["secretTargetRef"]} >= {"address", "password"}
    external = _by_name("TriggerAuthentication", "council-redis", "redis-external.yaml")
    (tls,) = [r for r in external["spec"]["secretTargetRef"] if r["parameter"] == "tls"]
    external_secret = _by_name("Secret", "council-redis", "redis-external.yaml")
    assert external_secret["stringData"][tls["key"]] == "enable"


def test_the_external_redis_url_verifies_its_certificate() -> None:
    """The rediss:// URL of redis-external.yaml, as celery's result backend, kombu's broker
    connection and the council's own redis-py client read it (no connection is made)."""
    import ssl

    import redis

    url = _by_name("Secret", "council-redis", "redis-external.yaml")["stringData"]["url"]
    assert url.startswith("rediss://")
    settings = Settings(redis_url=url)
    app = Celery("council-deploy-test", set_as_current=False)
    app.conf.update(celery_config(settings))
    assert app.backend.connparams["ssl_cert_reqs"] == ssl.CERT_REQUIRED
    assert Connection(url).ssl == {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    client = redis.Redis.from_url(url)
    assert client.connection_pool.connection_kwargs["ssl_cert_reqs"] == "required"
    # Without ssl_cert_reqs celery refuses the URL, and kombu would not verify at all.
    bare = url.split("?", 1)[0]
    bad = Celery("council-deploy-test-bare", set_as_current=False)
    bad.conf.update(celery_config(Settings(redis_url=bare)))
    with pytest.raises(ValueError, match="ssl_cert_reqs"):
        _ = bad.backend


def test_no_secret_value_is_committed() -> None:
    for path in [*_k8s_files(), *COMPOSE.iterdir(), ROOT / "Dockerfile"]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\bsk-[A-Za-z0-9_-]{16,}", text), path
    for secret in _of_kind("Secret"):
        for key, value in secret["stringData"].items():
            if key in ("password", "url"):
                assert "REPLACE-WITH" in value, f"{secret['metadata']['name']}.{key}"


# --- Compose ---------------------------------------------------------------------------


def test_compose_file_matches_the_compose_specification() -> None:
    _compose_validate(_compose())


def test_compose_services_and_their_queues() -> None:
    services = _compose()["services"]
    assert set(services) == {
        "redis", "worker-openai", "worker-anthropic", "worker-default", "prometheus",
    }  # fmt: skip
    consumed = {}
    for name, service in services.items():
        assert service["restart"] == "unless-stopped", name
        assert "healthcheck" in service, name
        if not name.startswith("worker-"):
            continue
        command = service["command"]
        ctx = worker_command.make_context("worker", list(command[1:]))
        consumed[name] = set(_queue_names(ctx.params["queues"]).split(","))
        _assert_metrics_served_to_others(ctx.params)
        assert service["depends_on"] == {"redis": {"condition": "service_healthy"}}
    assert consumed == {
        "worker-openai": {"council.openai"},
        "worker-anthropic": {"council.anthropic"},
        "worker-default": {"council.default", CONSOLIDATE_QUEUE},
    }


def test_compose_redis_keeps_every_write() -> None:
    command = _compose()["services"]["redis"]["command"]
    assert command[0] == "redis-server"
    assert _flag(command, "--appendonly") == "yes"
    assert _flag(command, "--appendfsync") == "everysec"
    assert _flag(command, "--maxmemory-policy") == "noeviction"
    assert _compose()["services"]["redis"]["volumes"] == ["redis-data:/data"]


def test_compose_workers_stop_gracefully_after_the_backstop() -> None:
    services = _compose()["services"]
    for name in ("worker-openai", "worker-anthropic", "worker-default"):
        service = services[name]
        assert service["stop_signal"] == "SIGTERM"
        assert _duration_s(service["stop_grace_period"]) > BACKSTOP_S
        env = service["environment"]
        assert int(env["COUNCIL_VISIBILITY_TIMEOUT_S"]) >= 2 * BACKSTOP_S
        assert env["COUNCIL_REDIS_URL"] == "redis://redis:6379/0"
        assert service["read_only"] is True and service["cap_drop"] == ["ALL"]
        assert service["volumes"] == ["/tmp"]  # on disk: run trees can take gigabytes


def test_compose_lets_only_the_program_worker_sandbox_its_programs() -> None:
    """bubblewrap needs namespaces Docker's defaults refuse: worker-default (reviewer
    programs) lifts exactly those; the provider workers keep Docker's defaults."""
    services = _compose()["services"]
    assert services["worker-default"]["security_opt"] == [
        "no-new-privileges:true",
        "seccomp=unconfined",
        "apparmor=unconfined",
        "systempaths=unconfined",
    ]
    for name in ("worker-openai", "worker-anthropic"):
        assert services[name]["security_opt"] == ["no-new-privileges:true"]
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"apt-get install [^\n]*\bbubblewrap\b", dockerfile)


def test_compose_keys_come_from_the_env_file_only() -> None:
    services = _compose()["services"]
    for name in ("worker-openai", "worker-anthropic", "worker-default"):
        assert services[name]["env_file"] == [{"path": "council.env", "required": True}]
        assert not [k for k in services[name]["environment"] if k.endswith("_API_KEY")]
    example = (COMPOSE / "council.env.example").read_text(encoding="utf-8")
    entries = [line for line in example.splitlines() if line and not line.startswith("#")]
    assert entries == ["OPENAI_API_KEY=", "ANTHROPIC_API_KEY="]
    assert "council.env" in (COMPOSE / ".gitignore").read_text(encoding="utf-8").split()


def test_prometheus_scrapes_every_compose_worker() -> None:
    config = yaml.safe_load((COMPOSE / "prometheus.yml").read_text(encoding="utf-8"))
    (job,) = config["scrape_configs"]
    (dns,) = job["dns_sd_configs"]
    workers = {n for n in _compose()["services"] if n.startswith("worker-")}
    assert set(dns["names"]) == workers
    assert dns["port"] == METRICS_PORT and dns["type"] == "A"
    assert job["metrics_path"] == "/metrics"
    mount = "./prometheus.yml:/etc/prometheus/prometheus.yml:ro"
    assert mount in _compose()["services"]["prometheus"]["volumes"]


# --- systemd and the image ---------------------------------------------------------------


def test_systemd_unit_stops_after_the_backstop() -> None:
    unit = (ROOT / "deploy" / "systemd" / "council-worker@.service").read_text("utf-8")
    values = dict(
        line.split("=", 1) for line in unit.splitlines() if "=" in line and line[:1] != "#"
    )
    assert values["KillSignal"] == "SIGTERM"
    assert int(values["TimeoutStopSec"]) > BACKSTOP_S


def test_dockerfile_forwards_sigterm_to_the_worker_only() -> None:
    lines = (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines()
    entrypoint = next(json.loads(x.split(None, 1)[1]) for x in lines if x.startswith("ENTRYPOINT"))
    assert entrypoint == ["/usr/bin/tini", "--", "council"]  # no -g: programs keep running
    user = next(shlex.split(x)[1] for x in lines if x.startswith("USER "))
    assert user == "10001:10001"
    assert "EXPOSE 9464" in lines
