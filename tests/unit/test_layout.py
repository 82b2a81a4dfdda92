"""The layout the architecture promises (docs/architecture.md "Layers"): the pure domain
loads no adapter, no runtime and nothing that runs a program; folders and modules stay
small enough to read. import-linter checks the import graph statically (``make lint``);
these tests check what an import really loads, and the sizes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("council", "reviewers", "workers")
MAX_MODULES = 15
"""Most ``.py`` files one folder holds, besides ``__init__.py`` and ``__main__.py``."""
MAX_LINES = 600
"""Most lines one module holds."""

FORBIDDEN_ROOTS = frozenset(
    {"reviewers", "workers", "subprocess", "celery", "kombu", "redis", "fakeredis", "httpx"}
    | {"aiohttp", "openai", "anthropic", "structlog", "click", "rich", "starlette", "uvicorn"}
)
"""Top-level modules the pure domain must not load: the adapters, the runtime, anything
that runs a program or talks to a service."""

_PROBE = """
import importlib, json, pkgutil, sys
import council
names = [m.name for m in pkgutil.walk_packages(council.__path__, "council.")]
for name in names:
    importlib.import_module(name)
print(json.dumps({"modules": names, "loaded": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def test_importing_every_domain_module_loads_no_adapter_runtime_or_subprocess() -> None:
    """A fresh interpreter imports all of council/ and is asked what it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, check=True
    )
    seen = json.loads(done.stdout)
    assert len(seen["modules"]) > 50  # the walk found the domain, not an empty package
    assert sorted(FORBIDDEN_ROOTS & set(seen["loaded"])) == []


def _modules(folder: Path) -> list[Path]:
    return [p for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]


def test_no_folder_holds_more_than_fifteen_modules() -> None:
    crowded = {
        str(folder.relative_to(ROOT)): len(_modules(folder))
        for package in PACKAGES
        for folder in [ROOT / package, *(ROOT / package).rglob("*")]
        if folder.is_dir() and len(_modules(folder)) > MAX_MODULES
    }
    assert crowded == {}


def test_no_module_is_longer_than_six_hundred_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
