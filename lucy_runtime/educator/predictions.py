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
import math
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
#
# What a prediction asks is read from the page itself: its "Predict." paragraph, and the answer
# the page gives after it: the opening sentence of the paragraph right after the prompt, when the
# page goes on in prose ("before you read on"), and of the paragraph right after the experiment
# that records the block's evidence, with the table or sketch that sentence introduces. A
# statement earlier on the learner's path that holds nearly all of an answer statement's words,
# weighted by how rare each is, states that answer before it is asked.

@dataclass(frozen=True)
class Page:
    """One page a learner reads, as the cells (or, for a Markdown chapter, the sections) it shows in order.

    ``prose`` says which cells are Markdown; empty means every cell is (a chapter page)."""

    name: str
    cells: tuple[str, ...]
    prose: tuple[bool, ...] = ()

    def is_prose(self, cell: int) -> bool:
        return not self.prose or self.prose[cell]


@dataclass(frozen=True)
class Place:
    page: int  # the page's index on the learner's path
    cell: int
    at: int = 0  # where in the cell, in characters

    def before(self, other: "Place") -> bool:
        return (self.page, self.cell, self.at) < (other.page, other.cell, other.at)


@dataclass(frozen=True)
class Prediction:
    """A prompt, where it is asked, and the statements the page gives as its answer."""

    block: str
    asked: Place  # where its "Predict." paragraph starts
    prompt: str
    answer: tuple[str, ...]


@dataclass(frozen=True)
class Spoiler:
    """A prediction whose answer a learner can read before the prediction is asked."""

    block: str
    asked: str  # page and cell of the prompt
    shown: str  # page and cell of the earlier statement
    text: str  # what that statement says
    answer: str  # the answer statement it repeats


PROMPT = "**Predict"
SHARED = 0.9
"""An earlier statement holding this share of an answer statement's words (weighted by how rare each word
is on the path) states that answer. Today's pages peak at 0.8: rules the answer repeats as its reason."""
FEWEST_WORDS = 3
"""An answer statement with fewer words than this (common words left out) is too short to tell."""

_SOLUTION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS).*?### END (SOLUTION|HIDDEN TESTS)", re.S)
_FENCE = re.compile(r"^```.*?^```[ \t]*$", re.S | re.M)
_NOT_AN_ANSWER = ("#", "```", PROMPT, "**Build", "**Explain", "<!--")
_COMMON = frozenset("""a an and are as at be been but by can could do does each for from had has have her his
    how i if in into is it its may must no not now of on one or our so than that the their them then there
    these they this those to too two up was we were what when where which while who whom why will with would
    you your""".split())


def notebook_page(notebook: Path) -> Page:
    """What a learner reads in a unit notebook: every cell, without solutions or hidden tests."""
    cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    shown, prose = [], []
    for cell in cells:
        source = cell.get("source", "")
        text = _SOLUTION.sub("", "".join(source) if isinstance(source, list) else str(source))
        shown.append(text + "".join(_printed_source(name) for name in _GETSOURCE.findall(text)))
        prose.append(cell.get("cell_type") == "markdown")
    return Page(notebook.stem, tuple(shown), tuple(prose))


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


def statements(text: str, prose: bool = True) -> list[tuple[int, str]]:
    """What a learner reads, one claim at a time, with its offset: a sentence, a table row, a heading, or a
    line of code or of shown output (a code cell, or a fenced block in prose)."""
    if not prose:
        return _lines(text, 0)
    found: list[tuple[int, str]] = []
    at = 0
    for fence in _FENCE.finditer(text):
        found += _prose_statements(text[at:fence.start()], at) + _lines(fence.group(0), fence.start())
        at = fence.end()
    return found + _prose_statements(text[at:], at)


def _lines(text: str, offset: int) -> list[tuple[int, str]]:
    found, at = [], offset
    for line in text.splitlines(keepends=True):
        if line.strip() and not line.lstrip().startswith("```"):
            found.append((at, line.strip()))
        at += len(line)
    return found


def _prose_statements(text: str, offset: int) -> list[tuple[int, str]]:
    found = []
    for paragraph in re.finditer(r"\S(?:.(?!\n\s*\n))*.?", text, re.S):
        start, body = offset + paragraph.start(), paragraph.group(0)
        if body.lstrip().startswith(("|", "#")):
            found += [(at, row) for at, row in _lines(body, start) if not re.fullmatch(r"[|\-: ]+", row)]
            continue
        for sentence in re.finditer(r".+?(?:[.?!](?=\s)|$)", " ".join(body.split())):
            found.append((start, sentence.group(0).strip()))
    return [(at, s) for at, s in found if s]


def words(text: str) -> frozenset[str]:
    """A statement's words as the comparison sees them: lower case, no markup, common words left out,
    plural and past endings cut, so that "refuses" and "refused" meet."""
    found = set()
    for word in re.findall(r"[a-z0-9][a-z0-9_'-]*", re.sub(r"[`*]", " ", text.lower())):
        word = word.strip("'-")
        if word in _COMMON or (len(word) < 2 and not word.isdigit()):
            continue
        found.add(re.sub(r"(?<=\w{3})(es|s|ed|ing)$", "", word))
    return frozenset(found)


def predictions(path: tuple[Page, ...]) -> tuple[Prediction, ...]:
    """Every prediction on the path, with the prompt and the answer its page gives after it."""
    found: list[Prediction] = []
    given: set[str] = set()
    for p, page in enumerate(path):
        for c, text in enumerate(page.cells):
            for match in PREDICT_CALL.finditer(text):
                block = match.group("block")
                asked, prompt = _prompt(page, p, c)
                answer = _answer_paragraph(page, c + 1) + _answer_paragraph(page, _recorded(page, c, block) + 1)
                fresh = tuple(s for _, s in answer if s not in given)  # a sketch that grows repeats earlier answers
                given.update(fresh)
                found.append(Prediction(block, asked, prompt, fresh))
    return tuple(found)


def _prompt(page: Page, p: int, cell: int) -> tuple[Place, str]:
    """The "Predict." paragraph that comes before a predict call, and where it starts."""
    for c in range(cell - 1, -1, -1):
        at = page.cells[c].rfind(PROMPT) if page.is_prose(c) else -1
        if at >= 0:
            return Place(p, c, at), page.cells[c][at:]
    return Place(p, cell), ""


def _recorded(page: Page, cell: int, block: str) -> int:
    """The cell that records the block's evidence after its prompt (the experiment), or -2 when none does."""
    record = re.compile(r"""evidence\.record\(\s*(["'])""" + re.escape(block) + r"\1")
    return next((c for c in range(cell + 1, len(page.cells)) if record.search(page.cells[c])), -2)


def _answer_paragraph(page: Page, cell: int) -> list[tuple[int, str]]:
    """The paragraph a prose cell opens with, and the table it introduces: nothing when the cell is code,
    or opens with a heading, a new prompt or a new task."""
    if not 0 <= cell < len(page.cells) or not page.is_prose(cell):
        return []
    paragraphs = [p for p in re.split(r"\n\s*\n", page.cells[cell].strip()) if p.strip()]
    if not paragraphs or paragraphs[0].lstrip().startswith(_NOT_AN_ANSWER):
        return []
    opening = statements(paragraphs[0])[:1]  # the answer comes first; the sentences after it say why
    if not opening or not opening[0][1].endswith(":") or len(paragraphs) == 1:
        return opening
    shown = statements(paragraphs[1], prose=not paragraphs[1].startswith("```"))
    return opening + shown[paragraphs[1].startswith("|"):]  # a table's header row names columns, it answers nothing


def spoilers(path: tuple[Page, ...]) -> list[Spoiler]:
    """Every prediction on ``path`` whose answer an earlier statement (on its page or an earlier one) states."""
    earlier = [(Place(p, c, at), s, words(s)) for p, page in enumerate(path) for c, text in enumerate(page.cells)
               for at, s in statements(text, page.is_prose(c))]
    weight = _rarity([seen for _, _, seen in earlier])
    found = []
    for prediction in predictions(path):
        hit = _first_repeat(prediction, earlier, weight)
        if hit is not None:
            place, text, answer = hit
            where = lambda at: f"{path[at.page].name} cell {at.cell}"  # noqa: E731
            found.append(Spoiler(prediction.block, where(prediction.asked), where(place), text, answer))
    return found


def _rarity(seen: list[frozenset[str]]) -> Callable[[str], float]:
    """How much a word tells: the rarer on the path, the more (inverse document frequency)."""
    counts = Counter(word for words_ in seen for word in words_)
    return lambda word: math.log((len(seen) + 1) / (counts[word] + 1))


def _first_repeat(prediction: Prediction, earlier: list[tuple[Place, str, frozenset[str]]],
                  weight: Callable[[str], float]) -> tuple[Place, str, str] | None:
    claims = [(answer, claim, sum(map(weight, claim))) for answer in prediction.answer
              if len(claim := words(answer)) >= FEWEST_WORDS]
    for place, text, seen in earlier:
        if not place.before(prediction.asked):
            return None
        for answer, claim, total in claims:
            if sum(map(weight, claim & seen)) >= SHARED * total:
                return place, text, answer
    return None
