"""The docs say what the code does: the configuration table (docs/configuration.md) is made from
the settings and says every one of them, the paths name their parameters as the API does, and the
rule of what a submission changes is the API's."""

from __future__ import annotations

import re
from pathlib import Path

from app.domain.definitions import WHAT_CHANGES
from app.main import create_app
from app.settings import Settings
from tools.settings_table import PAGE, TABLE_START, settings_table, with_settings_table

REPO = Path(__file__).resolve().parents[2]
CONFIGURATION = PAGE.read_text()


def test_every_setting_has_a_description() -> None:
    undescribed = [name for name, info in Settings.model_fields.items() if not info.description]
    assert undescribed == []


def test_the_configuration_page_holds_exactly_the_table_made_from_the_settings() -> None:
    assert PAGE == REPO / "docs" / "configuration.md"
    assert TABLE_START in CONFIGURATION
    assert "--write docs/configuration.md -->" in TABLE_START  # the marker says how to remake it
    assert with_settings_table(CONFIGURATION) == CONFIGURATION, (
        "docs/configuration.md's table is stale: python3 tools/uv.py run --frozen python -m "
        "tools.settings_table --write docs/configuration.md"
    )


def test_the_table_has_a_row_for_each_setting_and_no_other() -> None:
    rows = re.findall(r"^\| `([A-Z_]+)` \|", settings_table(), re.MULTILINE)
    assert rows == [name.upper() for name in Settings.model_fields]
    for name in (
        "MAX_LATENESS_SECONDS",
        "API_KEY_CACHE_TTL_SECONDS",
        "FUTURE_SKEW_SECONDS",
        "DYNAMODB_READ_TIMEOUT_SECONDS",
        "API_KEY_CACHE_MAX_ENTRIES",
        "RATE_LIMIT_MAX_BUCKETS",
    ):
        assert f"| `{name}` |" in CONFIGURATION, name


def test_the_deadline_says_which_requests_it_does_not_cut() -> None:
    (row,) = [r for r in settings_table().splitlines() if "`REQUEST_DEADLINE_SECONDS`" in r]
    assert "seed" in row
    assert "reconcile" in row


def test_paths_in_the_readme_and_docs_name_their_parameters_as_the_api_does() -> None:
    document = create_app(Settings(dynamodb_endpoint="http://unused")).openapi()
    names = {
        parameter["name"]
        for path in document["paths"].values()
        for operation in path.values()
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "path"
    }
    assert names >= {"game", "variant", "period", "player_id", "snapshot_taken_at"}
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        used = set(re.findall(r"/\{(\w+)\}", page.read_text()))
        assert used <= names, (page.name, used - names)


def _words(text: str) -> str:
    return " ".join(text.split())


def test_what_a_submission_changes_is_said_once_and_the_same_everywhere() -> None:
    document = create_app(Settings(dynamodb_endpoint="http://unused")).openapi()
    outcome = document["components"]["schemas"]["BoardOutcomeOut"]["properties"]
    assert outcome["improved"]["description"] == WHAT_CHANGES
    for name in ("docs/api.md", "docs/boards.md"):
        text = (REPO / name).read_text()
        assert _words(WHAT_CHANGES) in _words(text), (
            f"{name} does not state the rule as the API does"
        )
        assert "worse or equal" not in text, name
