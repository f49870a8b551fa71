"""Admission: the schema, restarts, duplicates, conflicts and distinct occurrences (Unit A)."""

from __future__ import annotations

from ...engine.faults import Stop
from ..harness import Ctx, Harness
from ..kit import expect, ok, race, row, same_id, seen, topic

topic("schema", "5–15: the work schema and one persisted request")
topic("admission", "15–30: accepted, duplicate, conflict")


@row("schema-columns", unit="A", topic="schema",
     covers="Step 2: the work schema persists identity, session, payload and state where a fresh process finds them",
     hint="create_schema must commit tables with the columns the observer reads: work(work_id, source_id, session_id, "
          "text, state) and report(report_id, work_id, generation, session_id, body, delivery).")
def schema_columns(h: Harness) -> str:
    s = h.scenario("schema")
    ok(s.run(lambda c: c.stop(), plan=Stop), "create_schema, then the process dies", expect="crashed", harness=h)
    snap = seen(s.observe())
    return (f"a fresh process found the tables {snap.tables['work']!r} and {snap.tables['report']!r} "
            "with every column it reads")


@row("restart-keeps-work", unit="A", topic="admission",
     covers="Step 1–2: a request admitted into a list is lost when the process restarts",
     hint="Store the request in a table through queue.store inside a transaction, and let the block end so it commits.")
def restart_keeps_work(h: Harness) -> str:
    s = h.scenario("restart")
    source, session, text = h.source_id(), h.session_id(), h.text()

    def script(c: Ctx) -> None:
        c.admit(c.queue(), source, session, text)
        c.stop()

    ok(s.run(script, plan=Stop), "admit, then the process dies", expect="crashed", harness=h)
    snap = seen(s.observe())
    rows = snap.work_for(source)
    expect(len(rows) == 1, f"after the restart the store holds {len(rows)} work rows for {source}, not 1")
    got = rows[0]
    expect(got["session_id"] == session and got["text"] == text,
           f"the stored request changed: session {got['session_id']!r}, text {got['text']!r}; "
           f"admitted session {session!r}, text {text!r}", "Store source, session and text exactly as given.")
    expect(got["state"] == "pending", f"a new request is stored as {got['state']!r}, not 'pending'")
    return "the admitted request was found, verbatim and pending, by a fresh process after the first one died"


@row("duplicate-identical", unit="A", topic="admission",
     covers="Admit source s1 twice with identical session and text → one work record and a duplicate disposition",
     hint="Look the source_id up before inserting (or let a UNIQUE constraint say it exists) and answer DUPLICATE with the first work_id.")
def duplicate_identical(h: Harness) -> str:
    s = h.scenario("duplicate")
    source, session, text = h.source_id(), h.session_id(), h.text()

    def script(c: Ctx):
        q = c.queue()
        return [c.admit(q, source, session, text), c.admit(q, source, session, text)]

    first, second = ok(s.run(script), "admitting the same request twice")
    expect(first["outcome"] == "accepted", f"the first admission was {first['outcome']!r}, not accepted")
    expect(second["outcome"] == "duplicate", f"the repeated admission was {second['outcome']!r}, not duplicate")
    expect(same_id(first["work_id"], second["work_id"]),
           f"the duplicate named work {second['work_id']!r}, but the request is work {first['work_id']!r}")
    rows = seen(s.observe()).work_for(source)
    expect(len(rows) == 1, f"the store holds {len(rows)} work rows for one occurrence, not 1")
    return "one work row; the repeat answered DUPLICATE with the first work_id"


@row("duplicate-conflict", unit="A", topic="admission",
     covers="Reuse s1 with different text → conflict; original text and state unchanged",
     hint="When the source_id exists, compare session and text: equal is DUPLICATE, different is CONFLICT. Never update the stored row.")
def duplicate_conflict(h: Harness) -> str:
    s = h.scenario("conflict")
    source = h.source_id()
    # The stored request sits between the conflicting ones in sort order, so "different" cannot pass as
    # "not smaller" or "not larger".
    low_session, session, high_session = h.distinct(h.session_id)
    low_text, text, high_text = h.distinct(h.text)
    reuses = [(session, low_text), (session, high_text), (low_session, text), (high_session, text)]

    def script(c: Ctx):
        q = c.queue()
        first = c.admit(q, source, session, text)
        return [first] + [c.admit(q, source, other_session, other_text) for other_session, other_text in reuses]

    first, *answers = ok(s.run(script), "admitting a known source id with new content")
    outcomes = [a["outcome"] for a in answers]
    expect(outcomes == ["conflict"] * len(reuses), f"reusing a source id with other text (twice), then from other "
           f"sessions (twice), gave {outcomes}, not conflict every time")
    expect(all(same_id(a["work_id"], first["work_id"]) for a in answers),
           "a conflict should name the work that already holds the source id")
    rows = seen(s.observe()).work_for(source)
    expect(len(rows) == 1, f"{len(rows)} rows for {source} after the conflicts, not 1")
    expect(rows[0]["text"] == text and rows[0]["session_id"] == session,
           f"a conflicting admission changed the stored request to {rows[0]['text']!r} / {rows[0]['session_id']!r}")
    expect(rows[0]["state"] == "pending", f"a conflicting admission moved the request to {rows[0]['state']!r}")
    return "different text or session under a known source id is CONFLICT; the stored request is unchanged"


@row("distinct-occurrences", unit="A", topic="admission",
     covers="Admit s2 with the same text as s1 → two work records because occurrence identities differ",
     hint="Identify an occurrence by source_id only: two messages with the same words are still two requests.")
def distinct_occurrences(h: Harness) -> str:
    s = h.scenario("distinct")
    first, second, session, text = h.source_id(), h.source_id(), h.session_id(), h.text()

    def script(c: Ctx):
        q = c.queue()
        return [c.admit(q, first, session, text), c.admit(q, second, session, text)]

    a, b = ok(s.run(script), "admitting two sources with the same text")
    expect(a["outcome"] == b["outcome"] == "accepted", f"two occurrences gave {a['outcome']!r} and {b['outcome']!r}")
    expect(not same_id(a["work_id"], b["work_id"]), f"both occurrences were given work id {a['work_id']!r}")
    snap = seen(s.observe())
    expect(len(snap.work_for(first)) == 1 and len(snap.work_for(second)) == 1,
           f"expected one row for each source, found {len(snap.work_for(first))} and {len(snap.work_for(second))}")
    return "same text, two source ids: two work rows"


@row("admit-concurrent", unit="A", topic="admission",
     covers="Step 2: two intake processes admit one occurrence at the same moment → still one work item",
     hint="Look up and insert in one transaction (or rely on a UNIQUE constraint on source_id with ON CONFLICT), "
          "so no other process can slip in between the look and the write.")
def admit_concurrent(h: Harness) -> str:
    source, session, text = h.source_id(), h.session_id(), h.text()

    def admit(c: Ctx):
        return c.admit(c.queue(), source, session, text)

    for a, b, snap in race(h, "admit-race", None, admit, admit, ("the first admitting process", "the second")):
        outcomes = sorted([a["outcome"], b["outcome"]])
        rows = snap.work_for(source)
        expect(len(rows) == 1, f"two processes admitting one occurrence together left {len(rows)} work rows")
        expect(outcomes == ["accepted", "duplicate"], f"the two admissions answered {outcomes}, not accepted and duplicate")
    return "two racing admissions of one occurrence, in both orders of pause: one row, ACCEPTED and DUPLICATE"


# --- bounded admission and the claim -------------------------------------------
