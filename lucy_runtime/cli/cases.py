"""``lucy cases`` and ``lucy hand-in``: the educator cases, listed, and handed in as a learner would."""

from __future__ import annotations

from pathlib import Path


def _cases(args) -> int:
    from ..educator.alternatives import ALTERNATIVES
    from ..educator.cases import CASES
    from ..educator.practice_cases import PRACTICE_ALTERNATIVES, PRACTICE_CASES

    for case in CASES + PRACTICE_CASES:
        print(f"{case.name:<28} {case.unit}  caught by: {', '.join(case.expected)}\n    {case.breaks}")
    print("\nCorrect alternatives (must get full marks):")
    for case in ALTERNATIVES + PRACTICE_ALTERNATIVES:
        print(f"{case.name:<28} {case.breaks}")
    return 0


def _hand_in(args) -> int:
    """Fill a fetched unit notebook as a learner who wrote the reference (code and written answers)
    would, or with a case's mistake."""
    import nbformat

    from ..course.course import REPO
    from ..educator.cases import by_name
    from ..proof.verify import filled, with_written_answers

    notebook = Path(args.notebook)
    unit = notebook.stem
    source = REPO / "source" / unit / f"{unit}.ipynb"
    if not notebook.exists() or not source.exists():
        print(f"lucy hand-in: {notebook} is not a fetched unit notebook (no {notebook} or no {source})")
        return 2
    try:
        case = by_name(args.case) if args.case else None
    except KeyError:
        print(f"lucy hand-in: no educator case {args.case!r} (`lucy cases` lists them)")
        return 2
    if case is not None and case.unit != unit:
        print(f"lucy hand-in: case {case.name} is a mistake in {case.unit}, not in {unit}")
        return 2
    release, reference = nbformat.read(str(notebook), as_version=4), nbformat.read(str(source), as_version=4)
    nbformat.write(with_written_answers(filled(release, reference, case), reference), str(notebook))
    print(f"{notebook}: the reference" + (f" with case {case.name}: {case.breaks}" if case else ""))
    return 0


def add_to(sub) -> None:
    """The ``cases`` and ``hand-in`` subcommands, added to ``lucy``'s subparsers."""
    sub.add_parser("cases", help="list the educator cases").set_defaults(func=_cases)
    p = sub.add_parser("hand-in", help="fill a fetched notebook with the reference, or with an educator case's "
                                       "mistake (to try the exchange as a learner would)")
    p.add_argument("notebook", help="the fetched notebook, e.g. ch07_unit_a/ch07_unit_a.ipynb")
    p.add_argument("--case", help="an educator case of that unit (`lucy cases`), e.g. finish-bare-pass")
    p.set_defaults(func=_hand_in)
