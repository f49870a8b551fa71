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


class FenceError(LucyError):
    """``finish`` was given a claim that is not the work's current claim.

    The fence: only the worker that holds the claim, at the generation it claimed,
    may finish the work. A stale worker (the work was requeued and claimed again) and
    a worker that never claimed the work are both stopped here, with nothing changed.
    Chapter 12 extends the fence with leases, so an expired owner is stopped too.
    """
