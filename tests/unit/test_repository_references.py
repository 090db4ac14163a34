"""The repository stands alone: no comment, docstring or doc points at a document it does not hold.

Code and docs cite Apache RocketMQ's classes (org.apache.rocketmq.store.CommitLog) or our own docs/
(docs/protocol.md 4.1). Design notes, style guides, planning documents and tracker issue numbers that
live outside the repository are refused here, with the file and line of each, so that a maintainer who
clones the repository can follow every reference. The second test checks that each section number
cited after docs/protocol.md exists there.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED_DIRS = ("src", "tests", "bench", "spark_jobs", "deploy", "examples", "docs")
SCANNED_TOP_FILES = ("Makefile", "README.md", "CONTRIBUTING.md", "CHANGELOG.md")
TEXT_SUFFIXES = {
    ".py",
    ".pyi",
    ".pyx",
    ".c",
    ".h",
    ".md",
    ".txt",
    ".hex",
    ".toml",
    ".yaml",
    ".yml",
    ".sh",
    ".cfg",
    ".ini",
    ".properties",
    ".conf",
    ".service",
    ".js",
    ".java",
    ".xml",
    ".html",
    ".j2",
}
SKIPPED_DIRS = {"node_modules", "__pycache__", ".venv", "target", "build", "dist", ".pytest_cache", "site"}

# name -> pattern of a reference to a document outside the repository
OUT_OF_REPO = {
    "a protocol.md other than docs/protocol.md": re.compile(r"(?<!docs/)\bprotocol\.md\b"),
    "a design / API / style document": re.compile(r"\b(?:DESIGN|API|STYLE)\.md\b"),
    "a seed document": re.compile(r"\bseeds? \d{3}\b", re.IGNORECASE),
    "planning notes": re.compile(r"\bspark-notes\b", re.IGNORECASE),
    "an issue number": re.compile(r"\bissues? ?#?\d+", re.IGNORECASE),
    "a module that does not exist": re.compile(r"\badmin_api\.py\b"),
}
SECTION_REF = re.compile(
    r"docs/protocol\.md(?:'s)?[\s:]*(?:sections?\s+)?(\d+(?:\.\d+)*(?:\s*(?:,|/|and)\s*\d+(?:\.\d+)*)*)"
)


def _scanned_files() -> list[Path]:
    files = [ROOT / name for name in SCANNED_TOP_FILES if (ROOT / name).is_file()]
    for top in SCANNED_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            parts = set(path.relative_to(ROOT).parts)
            if path.is_file() and path.suffix in TEXT_SUFFIXES and not parts & SKIPPED_DIRS:
                files.append(path)
    return [p for p in files if p.resolve() != Path(__file__).resolve()]


def _out_of_repo_references(text: str) -> list[tuple[int, str]]:
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for what, pattern in OUT_OF_REPO.items():
            if pattern.search(line):
                found.append((lineno, f"{what}: {line.strip()[:120]}"))
    return found


def test_the_patterns_catch_what_they_should() -> None:
    bad = [
        "(protocol.md 2.4)",
        "see DESIGN.md 3",
        "(API.md)",
        "STYLE.md convention 6",
        "(seed 003 section 6.2)",
        "seeds 000, 001",
        "(spark-notes G7)",
        "(issue 8 item 6)",
        "Issue 4 scope",
        "(issue #12)",
        "client/admin_api.py",
    ]
    good = [
        "(docs/protocol.md 2.4)",
        "docs/api.md",
        "FrameFuzzer(seed * 1000 + index)",
        "a fixed seed 7",
        "org.apache.rocketmq.store.CommitLog#DefaultAppendMessageCallback",
        "the issue is timing",
    ]
    assert [text for text in bad if not _out_of_repo_references(text)] == []
    assert [text for text in good if _out_of_repo_references(text)] == []


def test_no_reference_to_a_document_outside_the_repository() -> None:
    problems = []
    for path in _scanned_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for lineno, what in _out_of_repo_references(text):
            problems.append(f"{path.relative_to(ROOT)}:{lineno}: {what}")
    assert problems == [], "cite an Apache RocketMQ class or our docs/ instead:\n" + "\n".join(problems)


def _protocol_sections() -> set[str]:
    """Every section number docs/protocol.md defines: headings, inline 'N.M' items, numbered lists."""
    defined: set[str] = set()
    current = ""
    for line in (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8").splitlines():
        heading = re.match(r"#{2,3} (\d+(?:\.\d+)*)\.? ", line)
        if heading:
            number = heading.group(1)
            defined.add(number)
            current = number.split(".")[0]
            continue
        if not current:
            continue
        defined.update(re.findall(rf"(?<![\d.])({current}\.\d+(?:\.\d+)?)(?!\d)(?!\.\d)", line))
        item = re.match(r"(\d+)\. ", line)
        if item:
            defined.add(f"{current}.{item.group(1)}")
    return defined


def test_every_cited_protocol_section_exists() -> None:
    defined = _protocol_sections()
    assert {"1.2", "2.13", "4.1", "4.8.3", "5.3", "6.11", "8.7"} <= defined
    missing = []
    for path in _scanned_files():
        if path.suffix not in {".py", ".md", ".hex"} or path == ROOT / "docs" / "protocol.md":
            continue
        text = path.read_text(encoding="utf-8")
        for match in SECTION_REF.finditer(text):
            for number in re.findall(r"\d+(?:\.\d+)*", match.group(1)):
                if number not in defined:
                    lineno = text.count("\n", 0, match.start()) + 1
                    missing.append(f"{path.relative_to(ROOT)}:{lineno}: docs/protocol.md {number}")
    assert missing == [], "sections cited but not in docs/protocol.md:\n" + "\n".join(missing)
