"""The few named exceptions of the runtime.

Expected outcomes (a duplicate, a refusal, an uncertain send) are values, never
exceptions. Exceptions are for misuse and for bugs.
"""


class LucyError(Exception):
    """Base class for every error the runtime raises on purpose."""


class InvalidField(LucyError, ValueError):
    """A value given to the runtime has the wrong type or size.

    ``field`` names the argument so the message can point at it.
    """

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class StoreMisuse(LucyError):
    """The store was used in a way that would lose or corrupt committed state."""


class TransportMisuse(LucyError):
    """The sender boundary was given something it cannot send."""
