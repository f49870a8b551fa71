"""Every fake of the services Lucy talks to, for tests, notebooks and the checkpoint.

The scripted model and its invocation log (``model``, for ``model.Model``); the remote service and the transport
in front of it (``service``, for ``transport.Transport``); a Telegram Bot API on 127.0.0.1 (``telegram``); the
practice notebook's three fakes, each behind its small protocol and keeping its own SQLite log (``broker``,
``seats``, ``case_service``, over ``service_log``), which the notebook imports from ``lucy_runtime.practice``.
The runtime's protocols stay in the runtime and know nothing of their fakes: a fake may import the runtime, never
the reverse.
"""
