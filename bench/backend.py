"""The embedded backend for the end-to-end benches, with moto's Query made to cost what the
partition holds instead of what the table holds.

moto answers a Query by listing every item of the table, sorted (``Table.all_items``), and then
keeping those of the asked partition: each Query costs the whole table, sorted, so a board of a
few hundred players (a table of a few thousand items) takes tens of milliseconds a Query, and a
show's rig spends its time there. Here a Query is given only the items it may keep (a table
Query its partition's items; an index Query the items whose index key attributes equal the
asked ones, found in one pass without sorting) and moto's own code does the rest, as before: the
same items, in the same order, the same pages and counts (``bench/tests/test_backend.py`` holds
the two side by side). Everything else is ``app.local.moto_runner``'s.

    python -m bench.backend -H 127.0.0.1 -p PORT
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from typing import Any

from app.local import moto_runner
from app.local.embedded import EmbeddedDynamo, _die_with_parent


def _candidates(table: Any, hash_key: Any, index_name: str | None, conditions: Any) -> list[Any]:
    """The items a Query of ``table`` may keep: what moto's ``all_items`` would give it, less
    those its own first test (the partition's key) would drop."""
    if index_name is None:
        held = table.items.get(hash_key) if hash_key is not None else None
        if held is None:
            return []
        return list(held.values()) if table.range_key_attr else [held]
    wanted = list(conditions or [])
    every = (
        (item for held in table.items.values() for item in held.values())
        if table.range_key_attr
        else iter(table.items.values())
    )
    if len(wanted) == 1 and wanted[0][1].type == "S":  # the service's: one string key
        name, text = wanted[0][0], wanted[0][1].value
        return [
            item
            for item in every
            if (found := item.attrs.get(name)) is not None
            and found.type == "S"
            and found.value == text
        ]
    return [item for item in every if all(_equal(item.attrs.get(n), v) for n, v in wanted)]


def _equal(found: Any, wanted: Any) -> bool:
    """``found == wanted`` as moto compares them (``DynamoType``), a string's without its cost
    (moto casts both sides on every comparison)."""
    if found is None:
        return False
    if wanted.type == "S":
        return bool(found.type == "S" and found.value == wanted.value)
    return bool(found == wanted)


def install() -> None:
    """Patch moto's ``Table.query`` in this process (the backend's)."""
    from moto.dynamodb.models.table import Table

    original = Table.query
    signature = inspect.signature(original)

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        asked = signature.bind(self, hash_key, *args, **kwargs).arguments
        index_name, conditions = asked.get("index_name"), asked.get("hash_key_conditions")
        if index_name is not None and not conditions:
            return original(self, hash_key, *args, **kwargs)  # nothing to narrow by
        candidates = _candidates(self, hash_key, index_name, conditions)
        self.all_items = lambda: candidates  # this call's only: removed below
        try:
            return original(self, hash_key, *args, **kwargs)
        finally:
            del self.all_items

    Table.query = query  # type: ignore[method-assign]


class FastEmbeddedDynamo(EmbeddedDynamo):
    """``EmbeddedDynamo`` running this module instead of ``app.local.moto_runner``."""

    def start(self) -> str:
        from app.local.embedded import free_port

        for _ in range(3):  # another process may take the free port before moto binds it
            self.port = free_port(self.host)
            self._process = subprocess.Popen(
                [sys.executable, "-m", "bench.backend", "-H", self.host, "-p", str(self.port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
                env={**os.environ, "MOTO_CALL_RESET_API": "false"},
            )
            if self._wait_ready():
                return self.endpoint
            self.stop()
        raise RuntimeError("the embedded DynamoDB (bench.backend) did not start")


def main(argv: list[str] | None = None) -> None:
    install()
    moto_runner.main(argv)


if __name__ == "__main__":
    main()
