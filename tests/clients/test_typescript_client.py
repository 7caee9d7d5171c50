"""The TypeScript client: installed from its lock, its generated types current with the committed
OpenAPI document, its own tests passing, packed into an installable tarball that a strict project
can install and type-check the READMEs' examples against, its example game server posting a
round and reading the top of a running service, and its cohort and league calls against one."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import httpx
import pytest

from tests.served import ROOT, clean_environment, serve

CLIENT = ROOT / "clients" / "typescript"
KEY = "ts-client-test-key"
NPM, NODE = shutil.which("npm"), shutil.which("node")
PACKAGE = json.loads((CLIENT / "package.json").read_text())
TS_BLOCK = re.compile(r"^```ts\n(.*?)^```", re.MULTILINE | re.DOTALL)
# What tsc prints for each problem with --pretty false: file(line,column): error TSnnnn: message.
DIAGNOSTIC = re.compile(r"^(?P<file>.+?)\((?P<line>\d+),(?P<column>\d+)\): error (?P<code>TS\d+): ")


def _npm(*args: str, cwd: Path = CLIENT) -> str:
    assert NPM is not None
    ran = subprocess.run(
        [NPM, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, f"npm {' '.join(args)}:\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    return ran.stdout


@pytest.fixture(scope="module")
def built() -> Path:
    if NPM is None or NODE is None:
        pytest.skip("no npm on this machine: the TypeScript client needs Node 20 or later")
    _npm("ci", "--no-audit", "--no-fund", "--loglevel=error")
    # The committed types are what the document generates now (a contract change regenerates).
    _npm(
        "exec",
        "--",
        "openapi-typescript",
        "../../docs/openapi.json",
        "--default-non-nullable",
        "false",
        "--output",
        "src/schema.ts",
        "--check",
    )
    _npm("test")  # builds, then the retry tests against a fake fetch
    return CLIENT / "dist"


@pytest.fixture(scope="module")
def tarball(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``npm pack`` makes (its prepack builds again), the file it names last on stdout."""
    destination = tmp_path_factory.mktemp("packed")
    name = _npm("pack", "--pack-destination", str(destination)).splitlines()[-1]
    return destination / name


def test_the_package_packs_into_an_installable_tarball(tarball: Path) -> None:
    version = PACKAGE["version"]
    assert tarball.name == f"leaderboard-client-{version}.tgz"
    readme = (CLIENT / "README.md").read_text()
    pack_line = next(line for line in readme.splitlines() if line.startswith("npm pack"))
    assert re.search(r"(?<![\w@/-])leaderboard-client-<version>\.tgz", pack_line), (
        f"the README's npm pack line should name the file npm makes ({tarball.name}): {pack_line}"
    )
    with tarfile.open(tarball) as packed:
        names = set(packed.getnames())
    # The types the declarations import ship beside them (./schema.js is src/schema.ts, built).
    shipped = {"index.js", "index.d.ts", "schema.js", "schema.d.ts"}
    assert {f"package/dist/src/{name}" for name in shipped} <= names
    assert "package/package.json" in names
    assert not any("/test/" in name or "node_modules" in name for name in names)


# A batch's results as a consumer reads them: `isAccepted` narrows each to its outcome, or else to
# its problem document; read without it, the outcome is not there to read.
BATCH_RESULTS = """\
import { LeaderboardClient, isAccepted, type BatchResult } from "@leaderboard/client";
const client = new LeaderboardClient({ baseUrl: "http://127.0.0.1:8000", apiKey: "k" });
const { results } = await client.submitScores([
  { playerId: "ada", score: 1, game: "trivia", variant: "classic", idempotencyKey: "k-ada" },
]);
const described: string[] = results.map((result: BatchResult) =>
  isAccepted(result)
    ? `${result.idempotencyKey}: ${result.body.boards.length} boards, replayed ${result.replayed}`
    : `${result.status} ${result.body.type} ${result.body.detail}, again in ${result.retryAfter ?? 1} s`,
);
console.log(described);
"""
BATCH_UNNARROWED = """\
import { LeaderboardClient } from "@leaderboard/client";
const client = new LeaderboardClient({ baseUrl: "http://127.0.0.1:8000", apiKey: "k" });
const { results } = await client.submitScores([{ playerId: "ada", score: 1, game: "t", variant: "v" }]);
console.log(results[0]?.body.boards);
"""


def _readme_example(readme: Path) -> str:
    blocks = TS_BLOCK.findall(readme.read_text())
    assert len(blocks) == 1, f"{readme} should hold one ```ts example, not {len(blocks)}"
    return str(blocks[0])


def test_a_strict_project_installs_the_tarball_and_type_checks_the_readme_examples(
    tarball: Path, tmp_path: Path
) -> None:
    """As a consumer: the tarball installed into a project type-checked with ``strict`` and without
    ``skipLibCheck``; the READMEs' examples and a batch's narrowed results compile, and a string
    score and a batch result read without narrowing are refused."""
    example = _readme_example(CLIENT / "README.md")
    wrong, replaced = re.subn(r"\bscore: (\d+)", r'score: "\1"', example, count=1)
    assert replaced == 1, "the README's example should submit a numeric score"
    sources = {
        "client-readme.ts": example,
        "root-readme.ts": _readme_example(ROOT / "README.md"),
        "string-score.ts": wrong,
        "batch-results.ts": BATCH_RESULTS,
        "batch-unnarrowed.ts": BATCH_UNNARROWED,
    }
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "package.json").write_text(
        json.dumps({"name": "consumer", "private": True, "type": "module"})
    )
    options = {
        "strict": True,
        "skipLibCheck": False,
        "module": "NodeNext",
        "moduleResolution": "NodeNext",
        "target": "ES2022",
        "types": ["node"],
        "noEmit": True,
    }
    (tmp_path / "tsconfig.json").write_text(
        json.dumps({"compilerOptions": options, "files": sorted(sources)})
    )
    # From npm's cache where it can (`npm ci` above filled it), at the versions the client pins.
    node_types = f"@types/node@{PACKAGE['devDependencies']['@types/node']}"
    _npm(
        "install",
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        str(tarball),
        node_types,
        cwd=tmp_path,
    )
    # The client's own pinned tsc (installed by `npm ci`) compiling the consumer's project.
    assert NODE is not None
    tsc = CLIENT / "node_modules" / "typescript" / "bin" / "tsc"
    ran = subprocess.run(
        [NODE, str(tsc), "-p", str(tmp_path), "--pretty", "false"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    found = [m.groupdict() for m in map(DIAGNOSTIC.match, ran.stdout.splitlines()) if m]
    # The two errors: the string where the score's number goes, reported at `score`, and a batch
    # result's outcome read without asking whether it is one, reported at `boards`.
    line = next(i for i, text in enumerate(wrong.splitlines(), 1) if 'score: "' in text)
    column = wrong.splitlines()[line - 1].index('score: "') + 1
    unnarrowed = BATCH_UNNARROWED.splitlines()
    boards = next(i for i, text in enumerate(unnarrowed, 1) if ".body.boards" in text)
    expected = [
        {
            "file": "batch-unnarrowed.ts",
            "line": str(boards),
            "column": str(unnarrowed[boards - 1].index("boards") + 1),
            "code": "TS2339",
        },
        {"file": "string-score.ts", "line": str(line), "column": str(column), "code": "TS2322"},
    ]
    assert sorted(found, key=lambda d: d["file"]) == expected, (
        "the packed client should type-check the READMEs' examples and a batch's narrowed results"
        " under strict, skipLibCheck false, and refuse only the string score (TS2322 at line"
        f" {line}, column {column}) and the unnarrowed result (TS2339):\n"
        f"{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    )
    assert "Type 'string' is not assignable to type 'number'" in ran.stdout
    assert "Property 'boards' does not exist" in ran.stdout


def test_the_example_game_server_posts_a_round_and_reads_the_top(
    built: Path, tmp_path: Path
) -> None:
    environment = clean_environment() | {"LEADERBOARD_DEV_API_KEY": KEY}
    with serve(tmp_path, environment, ready_timeout_s=90) as base_url:
        lines = _game_server(built, base_url)
        assert lines[:3] == [
            "posted ada: best 8750 on trivia#ts#alltime",
            "posted grace: best 9120 on trivia#ts#alltime",
            "posted alan: best 7300 on trivia#ts#alltime",
        ]
        assert lines[3:6] == ["1. Grace 9120 (fox)", "2. Ada 8750 (owl)", "3. Alan 7300 (cat)"]
        assert lines[6] == "ada is rank 2"
        # Run again: the same players, new submissions, the same board.
        assert _game_server(built, base_url)[3:6] == lines[3:6]


def _game_server(built: Path, base_url: str) -> list[str]:
    """The example game server's output against the service at ``base_url``."""
    assert NODE is not None
    settings = {
        "LEADERBOARD_URL": base_url,
        "LEADERBOARD_API_KEY": KEY,
        "LEADERBOARD_VARIANT": "ts",
    }
    ran = subprocess.run(
        [NODE, str(built / "examples" / "game-server.js")],
        env=clean_environment() | settings,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran.stdout.splitlines()


# Joins, a cohort's top, the rank in a cohort and the league, through the built client: run by
# Node, printing what each call returned as one JSON document.
COHORT_SCRIPT = """\
import { LeaderboardClient, LeaderboardError } from "%(index)s";
const client = new LeaderboardClient({ baseUrl: process.env.LEADERBOARD_URL, apiKey: process.env.LEADERBOARD_API_KEY });
const joins = [];
for (const playerId of ["ts-ann", "ts-bob", "ts-cy", "ts-ann"]) {
  joins.push(await client.joinBoard("tscohort", "league", "day", playerId));
}
for (const [playerId, score] of [["ts-ann", 10], ["ts-bob", 30]]) {
  await client.submitScore({ playerId, score, game: "tscohort", variant: "league" });
}
const top = await client.topOfCohort("tscohort", "league", "day", "bronze-1");
const { cohort } = await client.playerRank("tscohort", "league", "day", "ts-ann");
const league = await client.getLeague("tscohort", "league", "ts-cy");
let full = null;
try {
  await client.joinBoard("tscohort", "capped", "alltime", "ts-two");
} catch (error) {
  if (!(error instanceof LeaderboardError)) throw error;
  full = { status: error.status, type: error.type };
}
console.log(JSON.stringify({ joins, top: top.entries.map((e) => [e.playerId, e.rank]), cohort, league, full }));
"""


def test_the_client_joins_reads_a_cohort_and_a_league_of_a_running_service(
    built: Path, tmp_path: Path
) -> None:
    environment = clean_environment() | {"LEADERBOARD_DEV_API_KEY": KEY}
    with serve(tmp_path, environment, ready_timeout_s=90) as base_url:
        tiers = [{"id": "bronze", "promote": 1}, {"id": "silver", "demote": 1}]
        definitions = {
            "league": {"cohortSize": 2, "periods": ["day"], "tiers": tiers},
            "capped": {"maxEntrants": 1, "periods": ["alltime"]},
        }
        with httpx.Client(base_url=base_url, trust_env=False, timeout=10.0) as http:
            for variant, body in definitions.items():
                defined = http.put(
                    f"/v1/games/tscohort/variants/{variant}",
                    json=body,
                    headers={"Authorization": f"Bearer {KEY}"},
                )
                assert defined.status_code == 200, defined.text
            joined = http.post(
                "/v1/leaderboards/tscohort/capped/alltime/entrants/ts-one",
                headers={"Authorization": f"Bearer {KEY}"},
            )
            assert joined.status_code == 201, joined.text
            today = http.get("/v1/leaderboards/tscohort/league/day").json()["period"]["id"]
        script = tmp_path / "cohorts.mjs"
        script.write_text(COHORT_SCRIPT % {"index": (built / "src" / "index.js").as_uri()})
        assert NODE is not None
        ran = subprocess.run(
            [NODE, str(script)],
            env=clean_environment() | {"LEADERBOARD_URL": base_url, "LEADERBOARD_API_KEY": KEY},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert ran.returncode == 0, ran.stderr[-3000:]
    said = json.loads(ran.stdout)
    assert [
        (j["entrant"]["playerId"], j["entrant"]["cohortId"], j["first"]) for j in said["joins"]
    ] == [
        ("ts-ann", "bronze-1", True),
        ("ts-bob", "bronze-1", True),
        ("ts-cy", "bronze-2", True),
        ("ts-ann", "bronze-1", False),
    ]
    assert {j["entrant"]["tier"] for j in said["joins"]} == {"bronze"}
    assert said["top"] == [["ts-bob", 1], ["ts-ann", 2]]
    assert said["cohort"] == {"cohortId": "bronze-1", "tier": "bronze", "rank": 2}
    assert said["league"] == {
        "tier": "bronze",
        "cohortId": "bronze-2",
        "period": today,
        "previous": None,
    }
    assert said["full"] == {"status": 409, "type": "/problems/full"}
