"""The practice notebook's supplied parts: two workers and a kill hook, and its three fakes (from `fakes/`) where the notebook imports them.

Each fake (in ``fakes/``) is a small protocol and an implementation that keeps its own record in a
SQLite file the learner's code never writes (as ``transport.FakeService`` does):

* ``broker``: ``publish(key, body)``, idempotent on the key, refusing a poison payload every time (exercise 1);
* ``seats``: ``POST /v1/seats`` that can commit and lose its answer, reset, throttle or refuse (exercise 2);
* ``case_service``: one action per ``tenant:case`` key, with receipts and a look-up (exercise 3).
"""

from ..fakes.broker import Ack, Broker, FakeBroker, Message, read_messages, read_publish_keys
from ..fakes.case_service import digest as case_digest
from ..fakes.case_service import (CaseAction, CaseReceipt, CaseRefused, CaseRequest, CaseService, FakeCaseService,
                           read_actions, read_case_requests)
from ..errors import BrokerRejected
from .kill import NotInAnExperiment, from_fresh_process, run_until_killed, stop_here
from ..fakes.seats import (Answered, FakeSeatService, GrantResult, NoAnswer, Post, Seat, SeatEvent, SeatOutcome, SeatScript,
                    SeatService, read_posts, read_seats)
from .workers import add_message, buggy_publish_one, case_key, create_tables, open_case, send_case

__all__ = ["Ack", "Answered", "Broker", "BrokerRejected", "CaseAction", "CaseReceipt", "CaseRefused", "CaseRequest", "CaseService",
           "FakeBroker", "FakeCaseService", "FakeSeatService", "GrantResult", "Message", "NoAnswer",
           "NotInAnExperiment", "Post", "Seat", "SeatEvent", "SeatOutcome", "SeatScript", "SeatService", "add_message",
           "buggy_publish_one", "case_digest", "case_key", "create_tables", "from_fresh_process", "open_case", "read_actions",
           "read_case_requests", "read_messages", "read_posts", "read_publish_keys", "read_seats", "run_until_killed",
           "send_case", "stop_here"]
