"""The practice notebook's exercise 3 rows: recovery after the worker died between sending and recording.

What holds is judged by behaviour alone, through the case service's own log: one action per case,
no second submit for a case the service holds, the service's receipt for the row's own proposal in
the ledger, and a case that cannot be settled recorded as such. Any design with those properties passes.
"""

from __future__ import annotations

from ...engine.child import PROBE
from ...engine.faults import KillAt
from ...practice import FakeCaseService, case_key, create_tables, open_case, send_case
from ..harness import Ctx, Harness, broken
from ..kit import expect, ok, row
from ..practice_observe import PracticeSnapshot
from .practice import UNIT, look, practice, practice_sweep, still_there


def recover(c: Ctx, service: FakeCaseService) -> int:
    value = c.fn("recover_cases")(c.store, service)
    if isinstance(value, bool) or not isinstance(value, int):
        raise broken(value, f"recover_cases returned {value!r}; it should return how many rows it recovered")
    return value


def case_service(c: Ctx) -> FakeCaseService:
    return FakeCaseService(c.scenario.log, probe=PROBE)


@row("practice-recover-from-receipt", unit=UNIT, topic="recover",
     covers="Exercise 3: after the worker dies between sending and recording, recovery takes the receipt from the "
            "service by the case's key, sends only what the service lacks, and never a duplicate request",
     hint="Only the service knows what it did: ask it by the case's key (service.lookup) before you send again, "
          "and send what it lacks with service.submit under the same key. A receipt is yours only for your own "
          "proposal, and a case that cannot be settled must say so in the ledger.")
def practice_recover_from_receipt(h: Harness) -> str:
    with practice(h) as p:
        s = p.scenario("recover")
        tenant = f"t{p.token(4)}"
        committed, lost, done, fresh, clash = (f"C{p.rng.randint(100, 999)}{p.token(3)}" for _ in range(5))
        keys = {case: case_key(tenant, case) for case in (committed, lost, done, fresh, clash)}

        def setup(c: Ctx):
            create_tables(c.store)
            for case in (committed, lost, done, fresh, clash):
                open_case(c.store, tenant, case, f"replace pump P-{p.token(3)} for {case}")
            send_case(c.store, FakeCaseService(c.scenario.log), done)
            # another proposal already holds the clash's key at the service: its own send is refused, unrecorded
            FakeCaseService(c.scenario.log).submit(keys[clash], f"replace valve V-{p.token(3)} for {clash}")
            send_case(c.store, FakeCaseService(c.scenario.log), clash)

        ok(s.run(setup), "preparing the ledger")
        ok(s.run(lambda c: send_case(c.store, case_service(c), committed), plan=lambda: KillAt(1, kinds=("accepted",))),
           "the worker dies after the service committed", expect="crashed", harness=p)
        ok(s.run(lambda c: send_case(c.store, case_service(c), lost), plan=lambda: KillAt(1, kinds=("send",))),
           "the worker dies before its request left", expect="crashed", harness=p)
        first = ok(s.run(lambda c: recover(c, case_service(c))), "recover_cases in a new process")
        second = ok(s.run(lambda c: recover(c, case_service(c))), "recover_cases once more")
        snap = look([s])[0]
    receipts = {a["key"]: a["receipt_id"] for a in snap.actions}
    for case, what in ((committed, "the service had committed"), (lost, "the request never arrived")):
        got = snap.case(case)
        expect(got is not None and got["receipt"] == receipts.get(keys[case]),
               f"when {what}, the ledger holds receipt {got and got['receipt']!r}; the service's record says "
               f"{receipts.get(keys[case])!r}", "The receipt comes from the service's answer (service.lookup, or "
               "service.submit), never from the ledger or a value you make up.")
        sent = snap.submits(keys[case])
        expect(sent != 0, f"when {what}, the service received no submit request for the case",
               "A case the service lacks must be sent: call service.submit(key, proposal) under the case's key.")
        expect(sent == 1, f"when {what}, the service received {sent} submit requests for the case, not 1",
               "The service already held the case, and it was sent again: ask the service first (service.lookup), "
               "and send only what it lacks.")
    expect(len(snap.actions) == 4 and len(receipts) == 4,
           f"the service holds {len(snap.actions)} actions for 3 sent cases and one other proposal")
    clashed = still_there(snap.case(clash), "the case whose key holds another proposal")
    expect(clashed["receipt"] is None, f"a case whose key holds another proposal at the service got receipt "
           f"{clashed['receipt']!r}: the receipt's digest is not the digest of this case's proposal, so that "
           "action is not this case's",
           "A receipt carries the digest of the proposal the service committed; one that differs from your own "
           "proposal's digest belongs to another action.")
    expect(clashed["intent"] != "sent", f"a case whose key holds another proposal at the service (a digest "
           f"mismatch) still says {clashed['intent']!r}: nothing records that it cannot be settled",
           "A case recovery cannot settle must say so in the ledger, with the reason, where a person sees it, "
           "and in a state the next run leaves alone.")
    expect(still_there(snap.case(done), "the case that already had its receipt")["receipt"] == receipts[keys[done]]
           and snap.submits(keys[done]) == 1,
           "recovery touched a case that already had its receipt")
    expect(still_there(snap.case(fresh), "the case whose worker never sent it")["intent"] == "new" and snap.submits(keys[fresh]) == 0,
           "recovery sent a case whose worker never recorded an intent")
    expect((first, second) == (2, 0), f"recover_cases answered {first} and then {second}; 2 rows needed it, then none")
    return ("both stranded cases carry the service's own receipt; one submit request per case, none twice; the "
            "case whose key holds another proposal is recorded as refused")


@row("practice-recover-sweep", unit=UNIT, topic="recover",
     covers="Exercise 3: recovery killed at every write, commit and service call, then run again: one action per "
            "case, each ledger row with the service's receipt",
     hint="A recovery stopped half-way must leave nothing the next run misreads: what the service did is known "
          "only to the service, so the next run asks it again rather than trusting what the last one wrote.")
def practice_recover_sweep(h: Harness) -> str:
    with practice(h) as p:
        tenant = f"t{p.token(4)}"
        committed, lost = f"C{p.token(5)}", f"C{p.token(5)}"

        def setup(c: Ctx):
            create_tables(c.store)
            for case in (committed, lost):
                open_case(c.store, tenant, case, f"replace pump for {case}")
            with c.store.transaction() as tx:  # the worker recorded its intent and died, twice
                tx.execute("UPDATE ledger SET intent = 'sent'")
            FakeCaseService(c.scenario.log).submit(case_key(tenant, committed), f"replace pump for {committed}")

        def judge(snap: PracticeSnapshot, where: str) -> None:
            receipts = {a["key"]: a["receipt_id"] for a in snap.actions}
            expect(len(snap.actions) == 2, f"{where}, the service holds {len(snap.actions)} actions for 2 cases")
            for case, which in ((committed, "the case the service had committed"), (lost, "the case it never got")):
                key, got = case_key(tenant, case), still_there(snap.case(case), which)
                expect(got["receipt"] == receipts.get(key),
                       f"{where}, {which} holds receipt {got['receipt']!r}, the service {receipts.get(key)!r}")
                expect(snap.submits(key) == 1, f"{where}, the service received {snap.submits(key)} submits for {which}")

        points = practice_sweep(p, "recover", setup, lambda c, _: recover(c, case_service(c)), judge,
                                after=lambda c: recover(c, case_service(c)),
                                roles={case_key(tenant, committed): "the committed case's key",
                                       case_key(tenant, lost): "the lost case's key"})
    return f"{len(points)} crash points in recover_cases: one action and the service's receipt for each case"
