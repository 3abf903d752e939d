"""Errors a user can act on.  Each message says what broke and what to do."""

from __future__ import annotations


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message ("" if it has none): enough for a one-line report."""
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


class KilnError(Exception):
    """Base for failures the build reports as a one-paragraph message, not a traceback."""


class SettingsError(KilnError):
    pass


class SpecError(KilnError):
    pass


class DiscoveryError(KilnError):
    pass


class LockError(KilnError):
    pass


class MissingEntriesError(KilnError):
    pass
