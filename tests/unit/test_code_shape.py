"""The shape the code keeps, checked before a reviewer has to: no module of ``app/`` past 450 lines
(the rule was met once and lost in 49 commits when nothing checked it), and no function or
constructor of ``app/services/`` taking more than 6 parameters (a use case takes the stores, its
policy and the request's values, never a list of ports)."""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
MAX_LINES = 450
MAX_PARAMETERS = 6


def test_no_module_of_the_app_is_past_450_lines() -> None:
    long = {
        str(path.relative_to(APP.parent)): lines
        for path in sorted(APP.rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"split these into modules of at most {MAX_LINES} lines: {long}"


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    given = node.args
    names = [a.arg for a in (*given.posonlyargs, *given.args, *given.kwonlyargs)]
    names += [f"*{a.arg}" for a in (given.vararg, given.kwarg) if a is not None]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def test_no_function_of_the_services_takes_more_than_six_parameters() -> None:
    many = [
        f"{path.relative_to(APP.parent)}:{node.lineno} {node.name}({', '.join(names)})"
        for path in sorted((APP / "services").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and len(names := _parameters(node)) > MAX_PARAMETERS
    ]
    assert many == [], "\n".join(many)
