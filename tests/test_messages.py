"""User-facing messages say the rule in words: the rule numbers of docs/rules.md
(R45, A27) stay in tests, comments and docstrings, never in an error a user reads
(issue: a drop-in for mpi4py, item 5)."""
import glob
import io
import os
import re
import tokenize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULE = re.compile(r"\b[RA]\d{1,3}\b")


def _message_strings(path):
    """The string literals of a module that are not docstrings."""
    with open(path) as src:
        tokens = list(tokenize.generate_tokens(io.StringIO(src.read()).readline))
    layout = (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE, tokenize.NL)
    for index, token in enumerate(tokens):
        if token.type != tokenize.STRING:
            continue
        before = tokens[index - 1].type if index else tokenize.NEWLINE
        after = tokens[index + 1].type if index + 1 < len(tokens) else tokenize.NEWLINE
        if before in layout and after in (tokenize.NEWLINE, tokenize.ENDMARKER):
            continue        # a docstring
        yield token.start[0], token.string


def test_no_error_message_carries_an_internal_rule_number():
    found = []
    for path in glob.glob(os.path.join(ROOT, "shmrma", "**", "*.py"), recursive=True):
        for line, text in _message_strings(path):
            if RULE.search(text) and "Halo A" not in text:      # Example A3 is a name
                found.append("%s:%d %s" % (os.path.relpath(path, ROOT), line, text[:60]))
    assert not found, found
