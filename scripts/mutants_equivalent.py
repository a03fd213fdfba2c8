"""Surviving mutants that are equivalent: the change cannot alter any result of fedlib. One line each, why.

Keys are mutmut's mutant names (stable while the function's source is unchanged); scripts/mutants.py marks these
survivors as equivalent in docs/testing.md. A survivor not listed here is a gap in the tests.
"""
EQUIVALENT: dict[str, str] = {
}
