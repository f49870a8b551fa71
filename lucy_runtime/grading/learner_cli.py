"""``lucy`` as a learner's environment has it: the checkpoint before Chapter 8, and nothing of the educator's.

The learner distribution (``lucy hub learner-env``, docs/class-on-a-server.md) is this
runtime without the educator's tools (``sandbox.EDUCATOR_TOOLS``); its ``lucy`` command is this module, so a
learner on the class's hub runs ``lucy checkpoint ch07 DIR`` from their own account.
The educator's ``lucy checkpoint`` is the same function.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .checkpoint import run_checkpoint_isolated, save_record, table


def checkpoint(chapter: str, notebook_dir: str, records: str, json_path: str | None, execute: bool = True) -> int:
    if chapter != "ch07":
        print(f"this runtime holds the chapter 7 checkpoint only, not {chapter!r}")
        return 2
    report = run_checkpoint_isolated(notebook_dir, execute=execute)
    print(table(report))
    record = save_record(report, Path(notebook_dir), Path(records))
    print(f"\nrecord saved to {record}")
    if json_path:
        Path(json_path).write_text(record.read_text())
    print("READY for Chapter 8: Telegram" if report.ready else "NOT READY for Chapter 8: fix the rows marked FAIL")
    return 0 if report.ready else 1


def add_checkpoint_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("chapter", help="the chapter you finished: ch07")
    p.add_argument("notebook_dir", nargs="?", default=".", help="the folder that holds your unit folders (default: here)")
    p.add_argument("--no-execute", action="store_true", help="do not run the notebooks first (they were run and saved)")
    p.add_argument("--records", default="checkpoints/records", help="where the saved record goes")
    p.add_argument("--json", help="also write the record to this file")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lucy", description="Lucy, the learner's commands")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("checkpoint", help="is this learner ready for Chapter 8? (runs notebooks, rows, Telegram, clock)")
    add_checkpoint_arguments(p)
    args = parser.parse_args(argv)
    return checkpoint(args.chapter, args.notebook_dir, args.records, args.json, execute=not args.no_execute)


if __name__ == "__main__":
    sys.exit(main())
