"""Fakes of the services Lucy talks to, for tests, notebooks and the checkpoint: a Telegram Bot API on 127.0.0.1.

Beside it, the practice notebook's three fakes, each behind its small protocol and keeping its own SQLite log
(``broker``, ``seats``, ``case_service``, over ``service_log``); the notebook imports them from ``lucy_runtime.practice``.
"""
