"""The acceptance rows, one module per topic. Importing this package registers them, in this order."""

from . import admission, claim, finish, durable, delivery, failure, operator, recovery, transfer, sweep, practice, practice_recover  # noqa: F401  (registers rows)
