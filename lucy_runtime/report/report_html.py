"""The class report as one self-contained HTML page, for the educator or, anonymized, for the class.

The anonymized edition is the one to put on the projector. "Could identify" means, here:
anything that names a learner (ids, names and emails from the gradebook, any e-mail
address or @handle, scrubbed wherever they occur), and anything written or produced by
one learner alone. So it has no per-learner table and no list of names; it quotes a
prediction, and shows a row's observation, only when at least ``QUOTED_FROM`` learners
gave the same one; counts stay.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from html import escape
from pathlib import Path

from ..educator.predictions import PromptResult
from .report import ClassReport, Group, Part, RowShare
from .svg import histogram, share_bars

QUOTED_FROM = 2

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 1.5rem auto; padding: 0 1rem; color: #1d232b; }
h1 { font-size: 1.6rem; } h2 { border-bottom: 2px solid #3b6ea8; padding-bottom: .2rem; margin-top: 2.5rem; }
h3 { margin-top: 1.6rem; } .say { background: #f3f6fa; border-left: 4px solid #d9822b; padding: .6rem 1rem; }
.say li { margin: .5rem 0; } table { border-collapse: collapse; margin: .5rem 0; font-size: .92rem; }
th, td { border: 1px solid #d8dde3; padding: .25rem .5rem; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; } .muted { color: #5b6673; font-size: .9rem; }
blockquote { margin: .3rem 0 .3rem 1rem; font-style: italic; } code { background: #eef1f5; padding: 0 .2rem; }
.warn { color: #a4421a; }
"""


class _Scrub:
    def __init__(self, roster: tuple[str, ...], on: bool):
        names = sorted((n for n in roster if len(n) >= 2), key=len, reverse=True)
        self.pattern = re.compile(r"(?i)(?<![\w])(" + "|".join(map(re.escape, names)) + r")(?![\w])") if names else None
        self.on = on

    def __call__(self, text: str) -> str:
        if not self.on:
            return text
        text = re.sub(r"[\w.+-]+@[\w-]+\.[\w.]+", "[a learner]", text)
        text = re.sub(r"(?<!\w)@\w+", "[a learner]", text)
        return self.pattern.sub("[a learner]", text) if self.pattern else text


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "–"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _things(count: int) -> str:
    """The headline list's heading counts what it holds."""
    words = {1: "One thing", 2: "Two things", 3: "Three things"}
    return words.get(count, f"{count} things") if count else "Nothing"


def _hardest_row(report: ClassReport, anonymized: bool, scrub: _Scrub) -> str | None:
    """The row the fewest passed, and what most of those who failed it saw."""
    rows = [(p, r) for p in report.parts for r in p.rows if r.graded and r.passed < r.graded]
    if not rows:
        return None
    part, row = min(rows, key=lambda pr: pr[1].share)
    line = (f"Only <b>{row.passed} of {row.graded}</b> passed <code>{escape(row.row)}</code> "
            f"({escape(part.assignment)}).")
    shown = [g for g in row.observations if not anonymized or g.learners >= QUOTED_FROM]
    if shown:
        line += (f" Most of them saw: <q>{escape(scrub(shown[0].observation))}</q> ({shown[0].learners}). "
                 f"The hint: {escape(scrub(shown[0].hint))}")
    return f'{line} <a href="#rows-{part.assignment}">evidence</a>'


def _commonest_mistake(report: ClassReport) -> str | None:
    """The largest group that fails like an educator case; else the first that fails like none."""
    groups = [(p, g) for p in report.parts for g in p.groups if g.kind == "case"]
    if groups:
        part, group = max(groups, key=lambda pg: len(pg[1].students))
        return (f"<b>{_n(len(group.students), 'learner')}</b> fail like <code>{escape(group.label)}</code>: "
                f"{escape(group.description)} {escape(group.teaching)} "
                f'<a href="#cases-{part.assignment}">evidence</a>')
    unmatched = [(p, g) for p in report.parts for g in p.groups if g.kind == "none"]
    if not unmatched:
        return None
    part, group = unmatched[0]
    return (f"<b>{_n(len(group.students), 'learner')}</b> fail in ways no educator case describes: "
            f'read their rows. <a href="#cases-{part.assignment}">evidence</a>')


def _most_wrong_prediction(report: ClassReport) -> str | None:
    """The prompt the largest share predicted wrong, and its commonest wrong prediction."""
    prompts = [(p, r) for p in report.parts for r in p.predictions if r.wrong]
    if not prompts:
        return None
    part, result = max(prompts, key=lambda pr: pr[1].wrong / max(pr[1].right + pr[1].wrong, 1))
    top = result.wrong_groups[0]
    return (f"At <i>{escape(result.prompt.block)}</i>, <b>{result.wrong} of {result.right + result.wrong}</b> "
            f"predicted something other than what the experiment showed ({escape(result.shown)}); "
            f"most often: <q>{escape(top.label)}</q> ({top.learners}). Start the session with it. "
            f'<a href="#predictions-{part.assignment}">evidence</a>')


def headlines(report: ClassReport, anonymized: bool, scrub: _Scrub) -> list[str]:
    """The three things to say to the class, each with a link to its evidence below."""
    said = (_hardest_row(report, anonymized, scrub), _commonest_mistake(report), _most_wrong_prediction(report))
    return [line for line in said if line is not None]


def _rows_section(part: Part, anonymized: bool, scrub: _Scrub) -> str:
    a = part.assignment
    html = [f'<h3 id="rows-{a}">1. Rows the class fails</h3>']
    if not part.rows:
        return html[0] + "<p>No acceptance row is graded in this assignment.</p>"
    items = [(r.row, 1 - r.share, f"{r.graded - r.passed} of {r.graded} failed") for r in part.rows]
    html.append("<p class=muted>Each bar: the share of the graded learners who <b>failed</b> the row.</p>"
                + share_bars(items, f"{a}: share of the class that failed each row", good_below=0.2))
    failing: list[RowShare] = [r for r in part.rows if r.observations]
    for row in failing:
        groups = [g for g in row.observations if not anonymized or g.learners >= QUOTED_FROM]
        html.append(f"<p><code>{escape(row.row)}</code>: {row.graded - row.passed} of {row.graded} failed.</p>")
        if len(groups) < len(row.observations):
            html.append("<p class=muted>Observations made in one submission only are left out of this edition.</p>")
        if groups:
            html.append("<table><tr><th>learners</th><th>what the sealed check observed</th><th>the hint they saw</th></tr>"
                        + "".join(f'<tr><td class="n">{g.learners}</td><td>{escape(scrub(g.observation))}</td>'
                                  f"<td>{escape(scrub(g.hint))}</td></tr>" for g in groups) + "</table>")
    return "".join(html)


def _group_row(group: Group, anonymized: bool) -> str:
    who = "" if anonymized else f'<div class="muted">{escape(", ".join(group.students))}</div>'
    if group.kind == "case":
        note = f"<div><b>Teaching note:</b> {escape(group.teaching)}</div>"
        guide = f"<div><b>Educator guide:</b> {escape(group.guide_note)}</div>" if group.guide_note else ""
        what = f"<div>{escape(group.description)}</div>{note}{guide}"
    elif group.kind == "none":
        what = ("<div>Their failing rows match no educator case's exactly. Read their rows: a mistake the cases "
                "do not describe yet, or several at once.</div>")
        if group.closest and not anonymized:
            what += "<ul>" + "".join(f"<li>{escape(s)}: close to <code>{escape(c)}</code> ({escape(how)})</li>"
                                     for s, c, how in group.closest) + "</ul>"
    elif group.kind == "all":
        alike = f" (so does the case {', '.join(group.cases)})" if group.cases else ""
        what = f"<div>Every row fails{escape(alike)}: a notebook handed in as released, or code that does not run.</div>"
    else:
        what = "<div>Every autograded row holds.</div>"
    return (f'<tr data-group="{escape(group.label)}"><td class="n">{len(group.students)}</td>'
            f"<td><code>{escape(group.label)}</code></td><td>{what}{who}</td></tr>")


def _cases_section(part: Part, anonymized: bool, stale: bool) -> str:
    html = [f'<h3 id="cases-{part.assignment}">2. Misconceptions, named</h3>',
            "<p class=muted>Each submission's set of failing rows, matched against the rows each educator case "
            "fails (<code>lucy cases</code>).</p>"]
    if stale:
        html.append('<p class="warn">The cases\' failing rows were measured before the cases, the reference or the '
                    "rows last changed: run <code>lucy report --refresh-cases</code>.</p>")
    html.append("<table><tr><th>learners</th><th>fail like</th><th>what it is</th></tr>"
                + "".join(_group_row(g, anonymized) for g in part.groups) + "</table>")
    return "".join(html)


def _prompt_block(result: PromptResult, anonymized: bool, scrub: _Scrub) -> str:
    def quotes(items) -> str:
        shown = [q for q in items if not anonymized or q.learners >= QUOTED_FROM]
        return "".join(f"<blockquote>{escape(scrub(q.text))} ({q.learners})</blockquote>" for q in shown)

    head = (f"<h4>{escape(result.prompt.block)}</h4><p class=muted>{escape(result.prompt.question)}</p>"
            f"<p>{_n(result.predicted, 'learner')} saved a prediction"
            + (f"; {result.no_prediction} did not" if result.no_prediction else "") + ".</p>")
    if not result.keyed:
        common = quotes(result.quotes)
        return head + (f"<p>No rule reads this prompt's answers: the most common predictions, to read:</p>{common}"
                       if common else "")
    judged = result.right + result.wrong
    if not judged and not result.unclear:
        return head
    body = (f'<p data-prompt="{escape(result.prompt.block)}">The experiment showed <b>{escape(result.shown or "–")}</b>. '
            f"<b>{result.right} of {judged}</b> predicted it ({_pct(result.right, judged)})"
            + (f"; {result.unclear} could not be told apart by the rule (read them)" if result.unclear else "") + ".</p>")
    for group in result.wrong_groups:
        body += f"<p>{_n(group.learners, 'learner')} predicted <q>{escape(group.label)}</q>:</p>" + quotes(group.quotes)
    return head + body


def _predictions_section(part: Part, anonymized: bool, scrub: _Scrub) -> str:
    html = [f'<h3 id="predictions-{part.assignment}">3. What the class predicted</h3>']
    problems = part.evidence_problems
    if problems:
        if anonymized:
            html.append(f"<p>{_n(len(problems), 'evidence file')} missing or unreadable.</p>")
        else:
            html.append(f"<p>{_n(len(problems), 'evidence file')} missing or unreadable (counted as no prediction):</p>"
                        "<table id=\"evidence-problems\"><tr><th>learner</th><th>evidence file</th></tr>"
                        + "".join(f"<tr><td>{escape(s)}</td><td>{escape(why)}</td></tr>" for s, why in problems)
                        + "</table>")
    if not part.predictions:
        html.append("<p>This notebook asks for no prediction.</p>")
    html += [_prompt_block(r, anonymized, scrub) for r in part.predictions]
    return "".join(html)


def _learners_section(part: Part) -> str:
    head = ("<tr><th>learner</th><th>score</th><th>autograded</th><th>written answers to grade</th>"
            "<th>failing rows</th><th>fails like</th><th>evidence</th><th>checkpoint</th><th>late penalty</th></tr>")
    rows = "".join(
        f'<tr data-student="{escape(x.student)}" data-score="{x.score:g}"><td>{escape(x.student)}</td>'
        f'<td class="n">{x.score:g} / {x.max_score:g}</td><td class="n">{x.auto_score:g} / {x.auto_max:g}</td>'
        f'<td class="n">{x.to_grade}</td><td>{escape(", ".join(x.failing)) or "–"}</td><td>{escape(x.matched)}</td>'
        f"<td>{escape(x.evidence)}</td><td>{escape(x.checkpoint) or '–'}</td>"
        f'<td class="n" data-late="{x.late_penalty:g}">{f"−{x.late_penalty:g}" if x.late_penalty else "–"}</td></tr>'
        for x in part.learners)
    missing = (f"<p>In the gradebook, no graded submission from: {escape(', '.join(part.not_handed_in))}.</p>"
               if part.not_handed_in else "")
    return (f'<h3 id="learners-{part.assignment}">4. Per learner</h3>'
            f'<table class="learners" id="table-{part.assignment}">{head}{rows}</table>{missing}')


def _scores_section(part: Part, anonymized: bool) -> str:
    scores = [x.score for x in part.learners]
    most = max((x.max_score for x in part.learners), default=0.0)
    html = [f'<h3 id="scores-{part.assignment}">5. Scores and progress</h3>',
            f"<p>{_n(len(scores), 'learner')}; mean {sum(scores) / max(len(scores), 1):.1f} of {most:g}; "
            f"{sum(s == most for s in scores)} with every point.</p>",
            "<p class=muted>Each column: how many learners scored in that range of points.</p>",
            histogram(scores, 0.0, most or 1.0, f"{part.assignment}: learners per score")]
    if len(part.runs) > 1 and part.movement:
        m = part.movement
        html.append("<table><tr><th>grading run</th><th>learners</th><th>mean score</th></tr>"
                    + "".join(f'<tr><td>{escape(r.recorded_at)}</td><td class="n">{len(r.scores)}</td>'
                              f'<td class="n">{r.mean:.1f}</td></tr>' for r in part.runs) + "</table>")
        html.append(f'<p id="movement-{part.assignment}">Since the run of {escape(m.since)}: <b>{m.up} up</b>, '
                    f"{m.down} down, {m.same} unchanged, {m.new} new, {m.gone} no longer graded; "
                    f"mean {m.mean_before:.1f} → {m.mean_after:.1f}.</p>")
        html.append(_moved(part, m, anonymized))
        if m.changes:
            low, high = min(min(m.changes), 0.0), max(max(m.changes), 0.0)
            html.append("<p class=muted>Each column: how many learners' scores changed by that many points.</p>")
            html.append(histogram(list(m.changes), low, high if high > low else low + 1,
                                  f"{part.assignment}: change of each learner's score since the run before"))
    else:
        html.append("<p class=muted>One grading run so far: after learners resubmit and you grade again, the next "
                    "report shows how the class moved.</p>")
    if part.problems and not anonymized:
        html.append("<p class=warn>" + "<br>".join(escape(p) for p in part.problems) + "</p>")
    return "".join(html)


def _moved(part: Part, m, anonymized: bool) -> str:
    """Who and which rows moved between the last two gradings (a regrade, a resubmission graded again)."""
    a = part.assignment
    html = [f'<h4 id="moved-{escape(a)}">What moved since the grading before'
            + (f" ({escape(m.why)})" if m.why else "") + "</h4>"]
    if not anonymized:
        for label, who in (("Up", m.went_up), ("Down", m.went_down)):
            if who:
                html.append(f'<p data-moved="{label.lower()}"><b>{label}:</b> {escape(", ".join(who))}</p>')
    if m.rows_moved:
        html.append("<p class=muted>Rows whose pass rate moved. Each bar: the share of the graded learners who "
                    "<b>passed</b> the row in the latest grading; the text gives it before and after.</p>")
        items = [(row, p2 / g2 if g2 else 0.0, f"{p1} of {g1} → {p2} of {g2} passed")
                 for row, p1, g1, p2, g2 in m.rows_moved]
        html.append(share_bars(items, f"{a}: share of the class that passed each row whose pass rate moved"))
    else:
        html.append("<p>No row's pass rate moved.</p>")
    return "".join(html)


def render(report: ClassReport, *, anonymized: bool) -> str:
    scrub = _Scrub(report.roster, anonymized)
    edition = "anonymized edition, for the class" if anonymized else "for the educator (names learners)"
    said = headlines(report, anonymized, scrub)
    body = [f"<h1>What the class did: {escape(report.course)}</h1>",
            f"<p class=muted>{escape(', '.join(p.assignment for p in report.parts))} · "
            f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC · {edition}</p>",
            f'<p class=muted id="late-policy">Late policy: {escape(report.late_policy or "not stated")}. Scores '
            "are before any late penalty; the per-learner table gives the penalty.</p>",
            '<section class="say"><h2 style="border:0;margin-top:0">'
            f"{_things(len(said))} to say to the class</h2><ol>"
            + "".join(f"<li>{line}</li>" for line in said) + "</ol>"
            + ("" if said else "<p>Nothing stands out: every row passed and every keyed prediction held.</p>")
            + "</section>"]
    for part in report.parts:
        body.append(f'<h2 id="{escape(part.assignment)}">{escape(part.assignment)}</h2>')
        body.append(_rows_section(part, anonymized, scrub))
        body.append(_cases_section(part, anonymized, report.signatures_stale))
        body.append(_predictions_section(part, anonymized, scrub))
        if not anonymized:
            body.append(_learners_section(part))
        body.append(_scores_section(part, anonymized))
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<title>What the class did: {escape(report.course)}</title><style>{STYLE}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")


@dataclass(frozen=True)
class Written:
    html: Path
    anonymized: Path
    csv: Path


def write_report(report: ClassReport, out: Path, name: str) -> Written:
    """The report as ``<name>.html``, ``<name>-anonymized.html`` and ``<name>.csv`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = Written(out / f"{name}.html", out / f"{name}-anonymized.html", out / f"{name}.csv")
    written.html.write_text(render(report, anonymized=False), encoding="utf-8")
    written.anonymized.write_text(render(report, anonymized=True), encoding="utf-8")
    written.csv.write_text(report.csv(), encoding="utf-8")
    return written
