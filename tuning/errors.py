"""Errors a user can act on.  Each message says what broke and what to do."""

from __future__ import annotations


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
