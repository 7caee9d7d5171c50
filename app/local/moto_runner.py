"""moto's DynamoDB server with its requests served one at a time, so that a burst queues instead of
failing (decision 0001): ``python -m app.local.moto_runner -H host -p port``. Two of moto's costs
that grow with the table are cut, with the same answers: a transaction's backup (a journal of its
items, not a copy of its tables) and a Query's starting set (the partition asked for, not every
item of the table, sorted); and one that every request paid, listing moto's own package.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterable
from types import FrameType
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple

StartResponse = Any
Environ = dict[str, Any]
_Journal = list[tuple[Any, Any, Any, Any]]
"""(table, hash key, range key, the item before the transaction or None)."""


def serialised(app: Any) -> Any:
    """The same application as ``moto_server``, with a lock around each request: moto's backend is
    not thread-safe (concurrent transactions deep-copy tables while other threads change them, and
    fail with ``RuntimeError: dictionary changed size during iteration``, an HTTP 500)."""
    lock = threading.Lock()

    def application(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        with lock:
            return list(app(environ, start_response))  # the body too is produced under the lock

    return application


def _journal_transactions() -> None:
    """moto backs up every table a transaction names by deep-copying it whole, so each
    transaction costs time in proportion to the table and a burst slows as the board grows. Keep a
    journal of the items the transaction names instead and put those back if it is cancelled: the
    same outcome, at a cost in proportion to the transaction.

    Where the items cannot be named up front (a malformed request), moto's own backup is kept."""
    import copy

    from moto.dynamodb import models
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    original = DynamoDBBackend.transact_write_items

    def journal(backend: Any, transact_items: list[dict[str, Any]]) -> _Journal | None:
        entries: _Journal = []
        try:
            for action in transact_items:
                (op,) = action.values()
                table = backend.tables.get(op.get("TableName"))
                if table is None:
                    continue  # not a table held by that name: moto fails the item, writes nothing
                attrs = op["Key"] if "Key" in op else op["Item"]
                hash_value = DynamoType(attrs[table.hash_key_attr])
                range_value = (
                    DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
                )
                before = copy.deepcopy(table.get_item(hash_value, range_value))
                entries.append((table, hash_value, range_value, before))
        except Exception:
            return None
        return entries

    def restore(entries: _Journal) -> None:
        for table, hash_value, range_value, before in reversed(entries):
            if range_value is None:
                if before is None:
                    table.items.pop(hash_value, None)
                else:
                    table.items[hash_value] = before
            elif before is None:
                table.items.get(hash_value, {}).pop(range_value, None)
                if not table.items.get(hash_value, True):
                    del table.items[hash_value]
            else:
                table.items[hash_value][range_value] = before

    class _TablesUncopied:
        """``copy`` for moto's module while a journalled transaction runs: a table's "backup"
        is the table itself (the journal restores it); everything else is copied as before."""

        @staticmethod
        def deepcopy(value: Any) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value)

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        entries = journal(self, transact_items)
        if entries is None:
            return original(self, transact_items)
        # Requests are served one at a time (see ``serialised``), so swapping the module's
        # ``copy`` for the length of one transaction is safe.
        setattr(models, "copy", _TablesUncopied)  # noqa: B010 - the module's own name
        try:
            return original(self, transact_items)
        except BaseException:
            restore(entries)
            raise
        finally:
            setattr(models, "copy", copy)  # noqa: B010

    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def _query_candidates(table: Any, hash_key: Any, index_name: Any, conditions: Any) -> list[Any]:
    """The items a Query may keep, found without sorting: a table Query's partition (a dict
    lookup by moto's key type, whose hash agrees with its equality); an index Query's items whose
    index key attributes equal the asked ones (one pass over the table)."""
    if index_name is None:
        held = table.items.get(hash_key)
        return [] if held is None else list(held.values())
    every = (item for partition in table.items.values() for item in partition.values())
    return [
        item
        for item in every
        if all((found := item.attrs.get(name)) is not None and found == v for name, v in conditions)
    ]


def _query_by_partition() -> None:
    """moto's Query starts from every item of the table, sorted (``Table.all_items``), keeps the
    partition asked for (or an index's matches) and sorts those again, so each Query costs time in
    proportion to the table, and every read of a test's board slows as the table grows. Start a
    Query from the items it may keep (``_query_candidates``): moto keeps and orders the same items
    as before (a partition's by their sort key; an index's by its keys, then the table's: an
    order of their own, whatever order they came in), at a cost in proportion to the partition,
    or to one unsorted pass over the table for an index.

    Requests are served one at a time (see ``serialised``), so giving the table its own
    ``all_items`` for the length of one Query is safe. A table without a sort key, or a Query
    with no partition key, goes through moto's own path."""
    import inspect

    from moto.dynamodb.models.table import Table

    original = Table.query
    signature = inspect.signature(original)

    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        asked = signature.bind(self, *args, **kwargs).arguments
        hash_key, index_name = asked.get("hash_key"), asked.get("index_name")
        conditions = asked.get("hash_key_conditions")
        if not self.range_key_attr or (hash_key is None if index_name is None else not conditions):
            return original(self, *args, **kwargs)
        items = _query_candidates(self, hash_key, index_name, conditions)
        self.all_items = lambda: items
        try:
            return original(self, *args, **kwargs)
        finally:
            del self.all_items

    Table.query = query  # type: ignore[method-assign]


def _moto_modules_listed_once() -> None:
    """moto's server asks, for every request, whether the request's host names one of moto's own
    modules, by listing moto's package directory and asking of each of its ~270 entries whether
    it is a directory: about a fifth of the backend's time for a small request (2.4 ms of CPU
    a GetItem with the list kept, 3.0 ms without). The package does not change while the server
    runs: list it once."""
    import functools

    from moto import backends

    original = backends.list_of_moto_modules
    backends.list_of_moto_modules = functools.cache(lambda: tuple(original()))


def _stop(signum: int, frame: FrameType | None) -> None:
    sys.exit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_PORT", str(args.port))
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    _journal_transactions()
    _query_by_partition()
    _moto_modules_listed_once()
    app = serialised(DomainDispatcherApplication(create_backend_app))
    run_simple(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
