"""Every rule id the code cites is defined in docs/rules.md, and no file sends its
reader to a document outside the repository.

Comments, docstrings and tests in shmrma/ and tests/ cite rules as R<n> and
ambiguities as A<n>, alone or as ranges (R152-R158, A14-A18, each id of a range
counting). docs/rules.md defines each with a "### R<n>" heading. Names that only
look like ids are not citations: the proposal's halo examples ("Example A3",
"Halo A3") and linter codes ("noqa: A001").
"""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES = os.path.join(ROOT, "docs", "rules.md")
SCANNED = {"shmrma": (".py", ".c", ".h"), "tests": (".py",)}
THIS_FILE = os.path.abspath(__file__)

# R12, A3, or a range R94-R96 / A14-A18 (an en dash too)
CITATION = re.compile(r"(?<![\w-])(?<!noqa: )(?<!Halo )(?<!Example )(?<!Examples )"
                      r"([RA])([1-9]\d{0,2})\b(?:\s*[-\u2013]\s*(?:[RA])?([1-9]\d{0,2})\b)?")
DEFINITION = re.compile(r"^### ([RA][1-9]\d{0,2})\s*$", re.MULTILINE)

# references a reader of the repository cannot follow
ELSEWHERE = {
    "API.md": re.compile(r"\bAPI\.md\b"),
    "ARCHITECTURE.md": re.compile(r"\bARCHITECTURE\.md\b"),
    "the checklist": re.compile(r"\bchecklist\b", re.IGNORECASE),
    "a numbered lesson": re.compile(r"\blessons?\s+\d", re.IGNORECASE),
    "the old _native.c": re.compile(r"(?<!shmrma/)\b_native\.c\b"),
    # (a C file including its neighbour folder's header stays inside)
    "a path outside the repository": re.compile(r"(?<!#include \")\.\./"),
}


def scanned_files():
    for top, endings in SCANNED.items():
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                if name.endswith(endings) and os.path.abspath(path) != THIS_FILE:
                    yield path


def lines():
    """(path relative to the repository, line number, text) of every scanned line."""
    for path in scanned_files():
        with open(path, encoding="utf-8") as source:
            for number, text in enumerate(source, 1):
                yield os.path.relpath(path, ROOT), number, text


def citations(text):
    """The ids ``text`` cites, ranges expanded."""
    for match in CITATION.finditer(text):
        kind, first, last = match.group(1), int(match.group(2)), match.group(3)
        for number in range(first, int(last) + 1 if last else first + 1):
            yield "%s%d" % (kind, number)


def defined():
    with open(RULES, encoding="utf-8") as rules:
        return DEFINITION.findall(rules.read())


def test_the_patterns_tell_citations_from_names():
    assert list(citations("R65, R69/R91 and A14-A16 (R94 - R96)")) == [
        "R65", "R69", "R91", "A14", "A15", "A16", "R94", "R95", "R96"]
    assert list(citations("Halo A3 n=4; Example A3; Examples A1-A3; noqa: A001; "
                          "0xA5; R2D2; FR3; R18-style")) == ["R18"]


def test_every_rule_is_defined_once():
    ids = defined()
    assert len(ids) == len(set(ids)), sorted(i for i in set(ids) if ids.count(i) > 1)


def test_every_cited_rule_is_defined():
    known = set(defined())
    missing = ["%s:%d %s" % (path, number, rule) for path, number, text in lines()
               for rule in citations(text) if rule not in known]
    assert not missing, "ids cited but not defined in docs/rules.md:\n" + "\n".join(missing)


def test_no_reference_leaves_the_repository():
    found = ["%s:%d cites %s: %s" % (path, number, what, text.strip())
             for path, number, text in lines()
             for what, pattern in ELSEWHERE.items() if pattern.search(text)]
    assert not found, "\n".join(found)
