"""Fakes of the services Lucy talks to, for tests, notebooks and the checkpoint: a Telegram Bot API on 127.0.0.1."""
