"""Every relative link in the README, the docs and the clients' READMEs leads somewhere: to a file
or folder that exists and, where the link names an anchor (``page.md#a-heading``), to a heading of
that page as GitHub makes its anchor. Decision records and experiment logs are history, never
edited, so their links are not checked: they say what was there then."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[2]

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[(?!\^)[^\]]+\]:[ \t]*<?([^\s>]+)>?(?:[ \t].*)?$", re.MULTILINE)
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)


def pages() -> list[Path]:
    """The README, docs/ but for its history, the clients' READMEs and docker/README.md."""
    docs = [
        path
        for path in sorted((REPO / "docs").rglob("*.md"))
        if "decisions" not in path.parts and "experiments" not in path.parts
    ]
    clients = [
        path
        for path in sorted((REPO / "clients").rglob("README.md"))
        if "node_modules" not in path.parts
    ]
    return [REPO / "README.md", *docs, *clients, REPO / "docker" / "README.md"]


def _prose(text: str) -> str:
    """The text without its code: neither a fenced block nor inline code holds links."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: the rendered text, lower case, without punctuation
    but ``-`` and ``_``, each space a ``-``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # HTML tags
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)  # _emphasis_, not snake_case
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a page has: its headings' (a repeated one gets -1, -2, ...) and HTML ones."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set(HTML_ANCHOR.findall(text))
    seen: dict[str, int] = {}
    for heading in HEADING.findall(text):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    prose = _prose(page.read_text(encoding="utf-8"))
    return [*LINK.findall(prose), *REFERENCE.findall(prose)]


def broken(page: Path, root: Path = REPO) -> list[str]:
    """What is wrong with each relative link of ``page``, as ``page: link: why`` (``page`` named
    from ``root``)."""
    where = page.relative_to(root)
    problems = []
    for target in links(page):
        if not target or EXTERNAL.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / unquote(path_part)).resolve() if path_part else page
        if not destination.exists():
            problems.append(f"{where}: {target}: no such file")
            continue
        if not anchor:
            continue
        if destination.suffix != ".md":
            problems.append(f"{where}: {target}: an anchor into a file that is no markdown")
        elif unquote(anchor) not in anchors(destination):
            problems.append(f"{where}: {target}: {destination.name} has no such heading")
    return problems


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken(page) == []


def test_the_check_finds_what_it_should(tmp_path: Path) -> None:
    assert slug("The `leaderboard` command") == "the-leaderboard-command"
    assert slug("Browsers of other origins (CORS)") == "browsers-of-other-origins-cors"
    assert slug("Beside the earlier Lambda design") == "beside-the-earlier-lambda-design"
    assert slug("1. Bootstrap CDK (once per account and region)") == (
        "1-bootstrap-cdk-once-per-account-and-region"
    )
    assert slug("Limits, and what happens when DynamoDB misbehaves") == (
        "limits-and-what-happens-when-dynamodb-misbehaves"
    )
    assert slug("JSON output (`--json`)") == "json-output---json"
    assert slug("Group (friends) boards") == "group-friends-boards"
    page = tmp_path / "page.md"
    other = tmp_path / "other.md"
    other.write_text("# Other\n\n## Twice\n\n## Twice\n\n```sh\n# not a heading\n```\n")
    page.write_text(
        "[ok](other.md) [ok](other.md#twice-1) [ok](#here) [ok](https://example.com/x.md)\n"
        "`[in code](missing.md)`\n\n```md\n[in a block](missing.md)\n```\n\n# Here\n\n"
        "[gone](missing.md) [no heading](other.md#not-a-heading) [third](other.md#twice-2)\n"
        "[upper](other.md#Twice)\n\n[ref]: other.md\n[gone too]: gone.md\n[^1]: a footnote\n"
    )
    assert anchors(other) == {"other", "twice", "twice-1"}
    found = [problem.split(": ", 1)[1] for problem in broken(page, tmp_path)]
    assert found == [
        "missing.md: no such file",
        "other.md#not-a-heading: other.md has no such heading",
        "other.md#twice-2: other.md has no such heading",
        "other.md#Twice: other.md has no such heading",
        "gone.md: no such file",
    ]


def test_the_map_lists_every_decision_record() -> None:
    """docs/README.md, the docs' map, links every record in docs/decisions/ (a new record goes
    into its table)."""
    listed = set(links(REPO / "docs" / "README.md"))
    records = sorted((REPO / "docs" / "decisions").glob("*.md"))
    assert records
    missing = [path.name for path in records if f"decisions/{path.name}" not in listed]
    assert missing == [], f"docs/README.md's table of decisions lacks {missing}"


MENTIONED = re.compile(r"(?<![\w/.-])docs/[\w./-]+\.(?:md|json|png)\b")


def test_every_docs_file_a_page_names_exists() -> None:
    """A page that names a file under docs/ in its text (``docs/openapi.json``), not as a link,
    names one that exists: a moved page leaves no stale mention behind."""
    missing = [
        f"{page.relative_to(REPO)}: {name}"
        for page in pages()
        for name in MENTIONED.findall(page.read_text(encoding="utf-8"))
        if not (REPO / name).exists()
    ]
    assert missing == []


CODE = re.compile(r"(?<![\w/.-])(?:app|tests|bench|tools|infra|clients)/[\w./-]+\.(?:py|js|ts)\b")
SERVICES = re.compile(r"(?<![\w/.-])services/[\w./-]+\.py\b")
"""A module named from the services folder, as the docs name them for short."""


def test_every_module_a_page_names_exists() -> None:
    """A module moved or renamed leaves no page naming its old path (decision records and
    experiment logs, never edited, name what was there then)."""
    missing = [
        f"{page.relative_to(REPO)}: {named}"
        for page in pages()
        for text in [page.read_text(encoding="utf-8")]
        for named in [*CODE.findall(text), *(f"app/{s}" for s in SERVICES.findall(text))]
        if not (REPO / named).exists()
    ]
    assert missing == [], "\n".join(missing)
