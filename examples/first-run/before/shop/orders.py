"""Orders: reading them and adding them up."""

from __future__ import annotations

import json
from pathlib import Path


def load_orders(path: Path) -> list[dict]:
    """The orders saved in a JSON file."""
    return json.loads(path.read_text())


def order_total(order: dict) -> float:
    """What an order costs: the sum of its lines."""
    return sum(line["price"] * line["quantity"] for line in order["lines"])
