"""Errors meant for the person at the terminal: the CLI prints them as one line."""


class UserError(Exception):
    """Bad input from the user (missing file, damaged trace, bad option): no traceback."""


class TraceFileError(UserError):
    """A trace file that is damaged, foreign, or from a newer dyngraph."""


class TraceFileWarning(UserWarning):
    """A trace file that loads, but not whole: cut short, or with a corrupt frame."""
