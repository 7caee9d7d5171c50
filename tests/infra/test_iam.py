"""Least privilege, derived from the code: the task role may do exactly what the DynamoDB adapter
calls (read from every module under app/store/), on exactly the two tables and RankIndex, less
the calls only operators make from their own machines; the execution role is another role."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import botocore.session
import pytest
from botocore import xform_name

from app.store.tables import RANK_INDEX
from tests.infra.synthesis import REPO, Synthesized, listify, ref_target, statements_of_role

STORE = REPO / "app" / "store"

TABLE_MANAGEMENT = frozenset(
    {
        "CreateTable",
        "UpdateTimeToLive",
        "ListTables",
        "DescribeTimeToLive",
        "UpdateTable",
        "DeleteTable",
    }
)
OPERATOR_ONLY = TABLE_MANAGEMENT | {"Scan"}
"""Run by `leaderboard create-tables` and `leaderboard keys list/revoke` from an operator's machine
(docs/deploy.md), never by the service or its scheduled task."""

# Each item of a transaction is authorised as the single-item call of its kind; the transaction
# itself has no IAM action.
TRANSACTION_ITEM_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
TRANSACT_GET_ITEM_ACTIONS = {"Get": "GetItem"}
WITHOUT_OWN_ACTION = frozenset({"TransactWriteItems", "TransactGetItems"})

_SESSION = botocore.session.get_session()
_OPERATIONS = {
    xform_name(name): name for name in _SESSION.get_service_model("dynamodb").operation_names
}
_WAITER_MODEL = _SESSION.get_waiter_model("dynamodb")
_WAITERS = {xform_name(name): name for name in _WAITER_MODEL.waiter_names}


def _is_client(node: ast.expr) -> bool:
    """``client``, ``self._client``, ``self._dynamo.client``, ``store.client``: whatever holds
    the aioboto3 client is named for it."""
    if isinstance(node, ast.Name):
        return node.id.lower().endswith("client")
    if isinstance(node, ast.Attribute):
        return node.attr.lower().endswith("client")
    return False


def client_operations(tree: ast.AST) -> dict[str, int]:
    """The DynamoDB operations a module sends, each with the first line that sends it: client
    methods, called or handed uncalled to a wrapper, and waiters and paginators by the operation
    they run."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _OPERATIONS and _is_client(node.value):
            found.setdefault(_OPERATIONS[node.attr], node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"get_waiter", "get_paginator"}
            and _is_client(node.func.value)
        ):
            (argument,) = node.args
            assert isinstance(argument, ast.Constant), ast.unparse(node)
            name = str(argument.value)
            if node.func.attr == "get_waiter":
                operation = _WAITER_MODEL.get_waiter(_WAITERS[name]).operation
            else:
                operation = _OPERATIONS[name]
            found.setdefault(operation, node.lineno)
    return found


def transaction_items(tree: ast.AST, kinds: dict[str, str]) -> dict[str, int]:
    """The actions of the transaction items a module builds: dicts keyed by an item kind."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and key.value in kinds:
                    found.setdefault(kinds[str(key.value)], key.lineno)
    return found


def dynamodb_calls(sources: dict[str, str]) -> dict[str, dict[str, int]]:
    """Every DynamoDB action some module's code needs: action -> {module: first line}. A
    transaction's items may be built in one module and sent from another, so "Get" items count
    wherever they are once any module reads in a transaction."""
    trees = {name: ast.parse(source) for name, source in sources.items()}
    operations = {name: client_operations(tree) for name, tree in trees.items()}
    kinds = dict(TRANSACTION_ITEM_ACTIONS)
    if any("TransactGetItems" in found for found in operations.values()):
        kinds |= TRANSACT_GET_ITEM_ACTIONS
    calls: dict[str, dict[str, int]] = defaultdict(dict)
    for name, tree in trees.items():
        for action, line in (transaction_items(tree, kinds) | operations[name]).items():
            calls[action][name] = line
    return dict(calls)


def store_calls() -> dict[str, dict[str, int]]:
    """The calls of every module of the adapter, by path from the repository root."""
    return dynamodb_calls(
        {str(p.relative_to(REPO)): p.read_text() for p in sorted(STORE.rglob("*.py"))}
    )


def iam_actions(actions: Iterable[str]) -> set[str]:
    return {f"dynamodb:{a}" for a in actions if a not in WITHOUT_OWN_ACTION}


def task_role_id(synthesized: Synthesized) -> str:
    return ref_target(synthesized.task_definition()["TaskRoleArn"])


def execution_role_id(synthesized: Synthesized) -> str:
    return ref_target(synthesized.task_definition()["ExecutionRoleArn"])


def granted(synthesized: Synthesized, role_id: str) -> tuple[set[str], list[dict[str, Any]]]:
    actions: set[str] = set()
    statements = list(statements_of_role(synthesized, role_id))
    for statement in statements:
        assert statement["Effect"] == "Allow"
        actions |= set(listify(statement["Action"]))
    return actions, statements


# ---- the derivation itself ---------------------------------------------------------------------


def test_the_derivation_sees_every_way_the_adapter_reaches_dynamodb() -> None:
    source = """
async def f(self, client, store):
    await self._call("x", self._client.put_item, Item={})
    await self._dynamo.call("y", lambda: self._dynamo.client.query(TableName="t"))
    await store.client.batch_get_item(RequestItems={})
    waiter = client.get_waiter("table_exists")
    pages = self._client.get_paginator("scan")
    items = [{"Update": {}}, {"ConditionCheck": {}}, {"Delete": {}}, {"Put": {}}]
    await self._client.transact_write_items(TransactItems=items)
    self.query_board()          # not the client's
    other.update_item()         # not a client
"""
    assert set(dynamodb_calls({"sample.py": source})) == {
        "PutItem",
        "Query",
        "BatchGetItem",
        "DescribeTable",  # the table_exists waiter
        "Scan",
        "UpdateItem",
        "ConditionCheckItem",
        "DeleteItem",
        "TransactWriteItems",
    }


def test_get_items_count_only_where_a_transaction_reads() -> None:
    built = {"items.py": 'item = {"Get": {"TableName": "t"}}'}
    assert "GetItem" not in dynamodb_calls(built)
    sent = built | {"client.py": "async def f(client):\n    await client.transact_get_items()"}
    assert set(dynamodb_calls(sent)) == {"GetItem", "TransactGetItems"}


def test_the_adapter_is_the_only_code_that_talks_to_dynamodb() -> None:
    """Otherwise the derivation below, which reads app/store/ only, could miss a call."""
    elsewhere = {
        f"{path.relative_to(REPO)}: {sorted(calls)}"
        for path in sorted((REPO / "app").rglob("*.py"))
        if STORE not in path.parents
        for calls in [client_operations(ast.parse(path.read_text()))]
        if calls
    }
    assert not elsewhere


# ---- the task role -----------------------------------------------------------------------------


def test_task_role_grants_exactly_the_dynamodb_actions_the_service_calls(
    synthesized: Synthesized,
) -> None:
    calls = store_calls()
    assert {"GetItem", "PutItem", "Query", "UpdateItem"} <= set(calls), (
        f"the derivation found too little in {STORE}: {sorted(calls)}"
    )
    actions, _ = granted(synthesized, task_role_id(synthesized))
    expected = iam_actions(set(calls) - OPERATOR_ONLY)
    assert actions == expected, (
        f"missing {sorted(expected - actions)}, not called {sorted(actions - expected)}"
    )


def test_only_operator_calls_are_left_out_of_the_task_role(synthesized: Synthesized) -> None:
    calls = store_calls()
    actions, _ = granted(synthesized, task_role_id(synthesized))
    left_out = {a.removeprefix("dynamodb:") for a in iam_actions(calls) - actions}
    assert left_out <= OPERATOR_ONLY
    assert left_out == set(calls) & OPERATOR_ONLY
    assert not {f"dynamodb:{a}" for a in OPERATOR_ONLY} & actions


def test_table_management_happens_only_in_the_tables_module() -> None:
    where = {
        action: sorted(modules)
        for action, modules in store_calls().items()
        if action in TABLE_MANAGEMENT
    }
    assert where, "no table management found: create-tables must create the tables somewhere"
    assert {m for modules in where.values() for m in modules} == {"app/store/tables.py"}, where


def test_task_role_reaches_only_the_two_tables_and_the_rank_index(
    synthesized: Synthesized,
) -> None:
    scores = synthesized.logical_id(synthesized.stack.scores_table)
    snapshots = synthesized.logical_id(synthesized.stack.snapshots_table)
    _, statements = granted(synthesized, task_role_id(synthesized))
    resources = [r for s in statements for r in listify(s["Resource"])]
    assert "*" not in resources
    rendered = set()
    for resource in resources:
        if isinstance(resource, dict) and "Fn::Join" in resource:
            _, parts = resource["Fn::Join"]
            rendered.add(tuple(ref_target(p) if isinstance(p, dict) else p for p in parts))
        else:
            rendered.add((ref_target(resource),))
    assert rendered == {(scores,), (snapshots,), (scores, f"/index/{RANK_INDEX}")}


def test_task_role_holds_nothing_but_dynamodb(synthesized: Synthesized) -> None:
    actions, _ = granted(synthesized, task_role_id(synthesized))
    assert actions
    assert {a for a in actions if not a.startswith("dynamodb:")} == set()


# ---- the execution role ------------------------------------------------------------------------


def test_execution_role_is_a_separate_role_without_data_access(synthesized: Synthesized) -> None:
    task, execution = task_role_id(synthesized), execution_role_id(synthesized)
    assert task != execution
    actions, statements = granted(synthesized, execution)
    assert not {a for a in actions if a.startswith("dynamodb:")}
    secret = synthesized.logical_id(synthesized.stack.cursor_secret)
    reads_secret = [
        s for s in statements if "secretsmanager:GetSecretValue" in listify(s["Action"])
    ]
    assert [ref_target(r) for s in reads_secret for r in listify(s["Resource"])] == [secret]
    assert {"ecr:BatchGetImage", "logs:PutLogEvents"} <= actions


def test_both_roles_are_for_ecs_tasks_only(synthesized: Synthesized) -> None:
    for role_id in (task_role_id(synthesized), execution_role_id(synthesized)):
        trust = synthesized.resources[role_id]["Properties"]["AssumeRolePolicyDocument"]
        principals = [s["Principal"] for s in trust["Statement"]]
        assert principals == [{"Service": "ecs-tasks.amazonaws.com"}]


@pytest.mark.parametrize("role", ["task", "execution"])
def test_no_role_is_granted_wildcard_actions(synthesized: Synthesized, role: str) -> None:
    role_id = task_role_id(synthesized) if role == "task" else execution_role_id(synthesized)
    _, statements = granted(synthesized, role_id)
    assert all(not a.endswith("*") for s in statements for a in listify(s["Action"]))
