"""The documentation holds together: every relative link in README.md and docs/*.md
leads to a file that exists (and, into a Markdown file, to a heading it has), every
repository path named in backticks exists, and the README stays a front page (at most
15 KB; the rest lives in docs/, one topic a file)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
README_MAX_BYTES = 15 * 1024

LINK = re.compile(r"(?<!!)\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")
CODE_SPAN = re.compile(r"`[^`]*`")
# A code span that is exactly a path into the repository (no placeholder or pattern).
REPO_PATH = re.compile(r"^(codegen|tests|runtime_c|templates|boards|qemu|examples|bench|docs)"
                       r"/[A-Za-z0-9_./-]*$")
# Paths that exist only elsewhere: the wheel's copy of the data folders.
NOT_IN_A_CHECKOUT = frozenset({"codegen/_data/"})


def prose_lines(text: str) -> list[str]:
    """The lines of a Markdown text outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def links(page: Path) -> list[str]:
    return [target for line in prose_lines(page.read_text())
            for target in LINK.findall(CODE_SPAN.sub("", line))]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(page.read_text()):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: no heading '#{anchor}' in {destination.name}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_lead_somewhere(page: Path) -> None:
    assert broken_links(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_paths_named_in_backticks_exist(page: Path) -> None:
    named = {span.strip("`") for line in prose_lines(page.read_text())
             for span in CODE_SPAN.findall(line)}
    missing = sorted(path for path in named if REPO_PATH.match(path)
                     and path not in NOT_IN_A_CHECKOUT and not (REPO / path).exists())
    assert missing == [], f"{page.name} names paths that do not exist"


def test_the_readme_is_a_front_page() -> None:
    size = (REPO / "README.md").stat().st_size
    assert size <= README_MAX_BYTES, (
        f"README.md is {size} bytes, over {README_MAX_BYTES}: move the detail into docs/")


def test_the_checks_find_what_is_broken(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## A `code` heading: yes\n")
    page.write_text("[ok](other.md) [ok](other.md#a-code-heading-yes) [web](https://x.org)\n"
                    "[gone](missing.md) [bad](other.md#nowhere) `[not](a-link.md)`\n"
                    "```\n[in code](fenced.md)\n```\n## Here\n[self](#here) [no](#there)\n")
    assert broken_links(page) == ["missing.md: no such file",
                                  "other.md#nowhere: no heading '#nowhere' in other.md",
                                  "#there: no heading '#there' in page.md"]
    assert slug("Numerics: what \"bit-exact\" means here") == \
        "numerics-what-bit-exact-means-here"
    assert slug("--integer-only") == "--integer-only"
