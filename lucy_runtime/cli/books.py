"""``lucy solutions-book`` and ``lucy book``: the worked answers from source/, and the chapter as a website
(lucy_runtime/books/)."""

from __future__ import annotations

from pathlib import Path


def _solutions_book(args) -> int:
    """The worked answers, printed from the solution cells of source/ (never stored twice)."""
    from ..books.solutions import solutions_book

    text = solutions_book(args.source)
    if args.out:
        Path(args.out).write_text(text)
        print(f"written to {args.out}")
    else:
        print(text)
    return 0


def _book(args) -> int:
    from ..books.book import BookBuildFailed, Edition, build

    editions = list(Edition) if args.edition == "both" else [Edition(args.edition)]
    for edition in editions:
        print(f"building the {edition.value} edition ...", flush=True)
        try:
            built = build(Path.cwd(), edition, Path(args.out).resolve(), Path(args.mermaid) if args.mermaid else None)
        except BookBuildFailed as problem:
            print(f"BOOK NOT BUILT: {problem}")
            return 1
        print(f"{edition.value} edition: {len(built.pages)} pages, open {built.html / 'index.html'}")
    return 0


def add_to(sub) -> None:
    """The ``solutions-book`` and ``book`` subcommands, added to ``lucy``'s subparsers."""
    p = sub.add_parser("solutions-book", help="print the worked answers from source/ (for educators)")
    p.add_argument("--out")
    p.add_argument("--source", default="source", help="the folder of reference notebooks")
    p.set_defaults(func=_solutions_book)
    p = sub.add_parser("book", help="build the chapter as a website (learner and educator editions)")
    p.add_argument("--edition", choices=["learner", "educator", "both"], default="both")
    p.add_argument("--out", default="build/book")
    p.add_argument("--mermaid", help="mermaid's dist folder (default: .venv/node/node_modules/mermaid/dist)")
    p.set_defaults(func=_book)
