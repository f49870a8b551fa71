"""The supervised-process engine: children that report each write, commit and send,
and a parent that decides (count, kill, fail, hold) within limits."""
