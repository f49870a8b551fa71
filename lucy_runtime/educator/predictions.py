"""What the class predicted before each experiment, read from the learners' evidence files.

Each unit notebook asks for a prediction (``evidence.predict(block, text)``) before an
experiment and saves what the experiment showed (``evidence.record(block, ...)``) in
``<unit>_evidence.json``, handed in beside the notebook. A prediction is free text, so
it is judged only where a short rule can tell what it says: a *key* reads the
learner's own observations (what *their* experiment showed) and the prediction, and
gives each a label ("none survive", "accepted / duplicate / conflict / accepted").
A prediction whose label equals the observation's predicted what the experiment
showed; one the rule cannot read is counted as *could not tell*, never as wrong.
Prompts without a key are listed with their predictions, for the educator to read.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PREDICT_CALL = re.compile(r"""evidence\.predict\(\s*(["'])(?P<block>.+?)\1""")
PLACEHOLDER = "write your prediction here"


@dataclass(frozen=True)
class Prompt:
    block: str
    question: str  # the notebook's "Predict." paragraph


@dataclass(frozen=True)
class EvidenceFile:
    """One learner's evidence for one unit: ``status`` is "ok", "missing" or "malformed: <why>"."""

    student: str
    status: str
    blocks: dict[str, dict]

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class Key:
    """How to read one prompt: ``shown`` labels the observations, ``said`` the prediction (None: cannot tell)."""

    block: str
    shown: Callable[[dict[str, Any]], str | None]
    said: Callable[[str], str | None]


@dataclass(frozen=True)
class Quote:
    text: str
    learners: int


@dataclass(frozen=True)
class WrongGroup:
    label: str  # what they predicted, as the key reads it
    learners: int
    quotes: tuple[Quote, ...]  # the most common wordings first


@dataclass(frozen=True)
class PromptResult:
    prompt: Prompt
    keyed: bool
    predicted: int  # learners who saved a prediction
    no_prediction: int  # learners with a readable evidence file and no prediction for this prompt
    right: int
    wrong: int
    unclear: int  # a prediction the key could not read, or no observation to compare it with
    shown: str  # what the experiment showed most often
    wrong_groups: tuple[WrongGroup, ...]
    quotes: tuple[Quote, ...]  # unkeyed prompts: the most common predictions


def prompts(notebook: Path) -> tuple[Prompt, ...]:
    """Every prediction prompt of a unit notebook, in order, with the paragraph that asks it."""
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError):
        return ()
    found, question = [], ""
    for cell in cells:
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if cell.get("cell_type") == "markdown":
            question = source.strip() if "Predict" in source else question
            continue
        for match in PREDICT_CALL.finditer(source):
            found.append(Prompt(match.group("block"), _predict_paragraph(question)))
            question = ""
    return tuple(found)


def _predict_paragraph(markdown: str) -> str:
    """The paragraph that starts "**Predict.**", without the bold marker."""
    for paragraph in markdown.split("\n\n"):
        if "**Predict.**" in paragraph:
            return " ".join(paragraph.replace("**Predict.**", "").split())
    return " ".join(markdown.split())[:400]


def read_evidence(student: str, path: Path) -> EvidenceFile:
    """A learner's evidence file; missing or malformed is a status, never an exception."""
    if not path.exists():
        return EvidenceFile(student, "missing", {})
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        return EvidenceFile(student, "malformed: not UTF-8 text", {})
    except ValueError as error:
        return EvidenceFile(student, f"malformed: not JSON ({str(error)[:60]})", {})
    except OSError as error:
        return EvidenceFile(student, f"malformed: unreadable ({error.strerror})", {})
    blocks = data.get("blocks") if isinstance(data, dict) else None
    if not isinstance(blocks, dict):
        return EvidenceFile(student, "malformed: no \"blocks\" object", {})
    kept = {str(name): entry for name, entry in blocks.items() if isinstance(entry, dict)}
    if len(kept) != len(blocks):
        return EvidenceFile(student, "malformed: a block is not an object", kept)
    return EvidenceFile(student, "ok", kept)


def normalized(text: str) -> str:
    """A prediction as it is grouped: lower case, words only, single spaces."""
    return " ".join(re.findall(r"[\w'-]+", text.lower()))


def judge(prompt: Prompt, files: list[EvidenceFile], key: Key | None, *, quotes: int = 3) -> PromptResult:
    predicted = no_prediction = right = wrong = unclear = 0
    shown_counts: Counter[str] = Counter()
    wrong_said: dict[str, Counter[str]] = {}
    wordings: dict[str, str] = {}
    every: Counter[str] = Counter()
    for file in files:
        entry = file.blocks.get(prompt.block, {})
        text = entry.get("prediction")
        if not isinstance(text, str) or not text.strip() or PLACEHOLDER in text.lower():
            no_prediction += file.ok
            continue
        predicted += 1
        norm = normalized(text)
        wordings.setdefault(norm, " ".join(text.split()))
        every[norm] += 1
        if key is None:
            continue
        observations = entry.get("observations")
        shown = key.shown(observations) if isinstance(observations, dict) else None
        said = key.said(text)
        if shown is not None:
            shown_counts[shown] += 1
        if shown is None or said is None:
            unclear += 1
        elif said == shown:
            right += 1
        else:
            wrong += 1
            wrong_said.setdefault(said, Counter())[norm] += 1
    groups = sorted((WrongGroup(label, sum(c.values()), tuple(Quote(wordings[t], n) for t, n in c.most_common(quotes)))
                     for label, c in wrong_said.items()), key=lambda g: -g.learners)
    common = tuple(Quote(wordings[t], n) for t, n in every.most_common(quotes)) if key is None else ()
    shown = shown_counts.most_common(1)[0][0] if shown_counts else ""
    return PromptResult(prompt, key is not None, predicted, no_prediction, right, wrong, unclear, shown,
                        tuple(groups), common)


def _number_words(text: str) -> list[int]:
    words = {"zero": 0, "none": 0, "no": 0, "nothing": 0, "once": 1, "one": 1, "twice": 2, "two": 2, "three": 3,
             "thrice": 3, "four": 4}
    found = []
    for token in re.findall(r"\b(\d+|zero|none|no|nothing|once|one|twice|two|three|thrice|four)\b", text.lower()):
        found.append(int(token) if token.isdigit() else words[token])
    return found


def _restart_said(text: str) -> str | None:
    lowered = text.lower()
    if re.search(r"\b(0|zero|none|nothing|no requests?|empty|lost|gone|disappear\w*)\b", lowered):
        return "none survive"
    if re.search(r"\b(3|three|all|every\w*)\b", lowered):
        return "all survive"
    return None


def _restart_shown(observed: dict[str, Any]) -> str | None:
    survived, admitted = observed.get("survived"), observed.get("admitted")
    if not isinstance(survived, int):
        return None
    return "none survive" if survived == 0 else "all survive" if survived == admitted else f"{survived} survive"


def _schema_said(text: str) -> str | None:
    lowered = text.lower()
    if re.search(r"\b(nothing|empty|none|no rows?|zero|0|lost|gone)\b", lowered):
        return "nothing is found"
    if re.search(r"\b(one|1|the (row|request|sample)|finds it|still there|survives?|persist\w*|committed)\b", lowered):
        return "the row is found"
    return None


def _schema_shown(observed: dict[str, Any]) -> str | None:
    sample = observed.get("persisted_sample")
    return None if not isinstance(sample, list) else "the row is found" if sample else "nothing is found"


OUTCOMES = {"accept": "accepted", "duplicate": "duplicate", "conflict": "conflict", "refuse": "refused"}


def _admission_said(text: str) -> str | None:
    words = re.findall(r"\b(accept|duplicate|conflict|refuse)\w*", text.lower())
    return " / ".join(OUTCOMES[w] for w in words) if len(words) == 4 else None


def _admission_shown(observed: dict[str, Any]) -> str | None:
    rows = observed.get("dispositions")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return None
    return " / ".join(str(r.get("outcome", "?")).lower() for r in rows)


def _calls_said(text: str) -> str | None:
    lowered = text.lower()
    near = re.search(r"(\w+)\s+(model\s+)?(calls?|times?)\b|\b(once|twice)\b", lowered)
    if near is None:
        return None
    numbers = _number_words(near.group(0))
    return f"{numbers[0]} model call{'s' * (numbers[0] != 1)}" if numbers else None


def _calls_shown(observed: dict[str, Any]) -> str | None:
    for step in observed.get("trace") or []:
        if isinstance(step, dict) and step.get("step") == "model calls" and isinstance(step.get("value"), int):
            return f"{step['value']} model call{'s' * (step['value'] != 1)}"
    return None


KEYS: dict[str, Key] = {key.block: key for key in (
    Key("0-5 restart", _restart_shown, _restart_said),
    Key("5-15 schema", _schema_shown, _schema_said),
    Key("15-30 admission", _admission_shown, _admission_said),
    Key("55-80 loop and report", _calls_shown, _calls_said),
)}
"""The prompts a short rule can read. Add one here when a prompt's answer is a count or a short list."""


# --- predictions come before their answers ---------------------------------------------------

@dataclass(frozen=True)
class Page:
    """One page a learner reads, as the cells (or, for a Markdown chapter, the sections) it shows in order."""

    name: str
    cells: tuple[str, ...]


@dataclass(frozen=True)
class Place:
    page: int  # the page's index on the learner's path
    cell: int

    def before(self, other: "Place") -> bool:
        return (self.page, self.cell) < (other.page, other.cell)


@dataclass(frozen=True)
class Spoiler:
    """A prediction whose answer a learner can read before the prediction is asked."""

    block: str
    asked: str  # page and cell of the prompt
    shown: str  # page and cell of the first text that shows the answer
    text: str  # what that text says


REVEALS: dict[str, tuple[str, ...]] = {
    # Each prediction, by its block, and what shows its answer: patterns (regular expressions,
    # case-insensitive) over what the learner reads, cell by cell: prose, code, and a check whose
    # output answers it. A new prompt gets its patterns here; the test fails while one is missing.
    "0-5 restart": (r"Nothing survived", r"found after the restart: 0"),
    "5-15 schema": (r"still there for the next process", r"The row came back"),
    "15-30 admission": (r"the same occurrence again: store nothing", r"same id, different content: something",
                     r"\|\s*DUPLICATE\s*\|"),
    "30-55 limits and claim": (r"the third claim (finds|returns|hands out) nothing",),
    "55-80 loop and report": (r"the model was called once", r"second call (returns|returned|hands back) None"),
    "80-85 reopen": (r"a fresh process finds `?done`? work and (one|a) `?pending`? report",),
    "85-90 dead worker": (r"refused with `?\"?session limit",),
    "0-10 lost answer": (r"Request 1 never will be", r"request 2 was\s+admitted"),
    "10-15 your finish": (r"request 2 was refused",),
    "15-30 rollback": (r"\| rollback case \| still `running`",),
    "30-65 lost reply": (r"reply lost\*\*, then \*\*Deliver one\*\*: the report stays UNKNOWN",
                         r"Never resending an\s+UNKNOWN"),
    "30-65 poison": (r"check\(\"delivery\"\)", r"r-3-1 left on the third call"),
    "30-65 chat order": (r"next call would send r-2-1", r"The second call sent chat-32's r-3-1",
                         r"check\(\"delivery\"\)"),
    "65-80 transfer": (r"model calls: 2\b",),
    "80-85 break": (r"The rows failed because the checker",),
    "further: keys": (r"r-1-1 was accepted once",),
    "further: reconcile": (r"reconcile confirmed: 1",),
    "further: generations": (r"worker_id = 'worker-1' AND generation = 1`, finds work 1 running\s+under worker-2",),
    "further: model errors": (r"waited out one backoff", r"tried ten times \(the policy's cap\)"),
    "further: retention": (r"the customer has two", r"the report stopped at `needs_person`"),
    "further: bug": (r"The loop ran once", r"loop runs: 1\b"),
    "further: release": (r"The worker's name came back; the generation did not", r"generation 2, so the fence refuses it"),
    "0-10 kill window": (r"The bug:", r"m1 says `sent` and the broker holds nothing"),
    "10-35 resume": (r"publishing --> publishing: crash, then the next run", r"A fresh key\s+per attempt would be a new message"),
    "35-55 grants": (r"answer lost once[^\n]{0,40}granted",),
    "55-75 crash": (r"\| C01 \| calder \| replace pump P-7 \| sent \| \(null\) \|",),
    "55-75 recover": (r"recovered: 1 \| actions at the service: 1", r"\| resend from the ledger \| a second request"),
}

_SOLUTION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS).*?### END (SOLUTION|HIDDEN TESTS)", re.S)


def notebook_page(notebook: Path) -> Page:
    """What a learner reads in a unit notebook: every cell, without solutions or hidden tests."""
    cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    shown = []
    for cell in cells:
        source = cell.get("source", "")
        text = _SOLUTION.sub("", "".join(source) if isinstance(source, list) else str(source))
        shown.append(text + "".join(_printed_source(name) for name in _GETSOURCE.findall(text)))
    return Page(notebook.stem, tuple(shown))


_GETSOURCE = re.compile(r"inspect\.getsource\((\w+)\)")


def _printed_source(name: str) -> str:
    """What ``print(inspect.getsource(name))`` shows, for a function the practice notebook imports."""
    import inspect  # noqa: PLC0415 - only the prediction-order check prints supplied code

    from .. import practice  # noqa: PLC0415

    found = getattr(practice, name, None)
    return "\n" + inspect.getsource(found) if callable(found) else ""


def chapter_page(markdown: Path) -> Page:
    """A chapter page in Markdown, cut at its headings."""
    return Page(markdown.stem, tuple(re.split(r"\n(?=#{2,3} )", markdown.read_text(encoding="utf-8"))))


def asked_at(path: tuple[Page, ...]) -> dict[str, Place]:
    """Where each prediction is asked: the cell with ``evidence.predict(block, …)``."""
    found: dict[str, Place] = {}
    for p, page in enumerate(path):
        for c, text in enumerate(page.cells):
            for match in PREDICT_CALL.finditer(text):
                found.setdefault(match.group("block"), Place(p, c))
    return found


def first_shown(path: tuple[Page, ...], patterns: tuple[str, ...]) -> tuple[Place, str] | None:
    for p, page in enumerate(path):
        for c, text in enumerate(page.cells):
            for pattern in patterns:
                match = re.search(pattern, text, re.I)
                if match:
                    return Place(p, c), match.group(0)
    return None


def spoilers(path: tuple[Page, ...], reveals: dict[str, tuple[str, ...]] = REVEALS) -> list[Spoiler]:
    """Every prediction on ``path`` whose answer shows before it is asked (on its page or an earlier one).

    A prompt with no entry in ``reveals`` is a spoiler of its own kind: nobody said what answers it."""
    found = []
    for block, asked in asked_at(path).items():
        where = f"{path[asked.page].name} cell {asked.cell}"
        if block not in reveals:
            found.append(Spoiler(block, where, "(no entry in REVEALS)", "say what shows this prediction's answer"))
            continue
        shown = first_shown(path, reveals[block])
        if shown is not None and shown[0].before(asked):
            place, text = shown
            found.append(Spoiler(block, where, f"{path[place.page].name} cell {place.cell}", text))
    return found
