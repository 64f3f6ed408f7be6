"""The errors of the Paimon kernel, each where Paimon raises its own."""

from __future__ import annotations

__all__ = ["PaimonArithmeticError", "PaimonMergeError", "PaimonOptionError"]


class PaimonOptionError(ValueError):
    """An invalid Paimon table option; ``key`` is the offending option key."""

    def __init__(self, key: str, message: str):
        self.key = key
        text = message if key in message else f"{message} (option '{key}')"
        super().__init__(text)


class PaimonMergeError(ValueError):
    """A record Paimon's merge functions refuse (same message as Paimon's exception)."""


class PaimonArithmeticError(ArithmeticError):
    """Numeric overflow / division error where Paimon raises ``ArithmeticException``."""
