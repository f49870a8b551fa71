"""Lucy's supplied runtime for Chapter 7: durable work.

Chapters 3–6 arrive as ``store``, ``sessions``, ``procedure``, ``model`` and ``loop``.
Chapter 7 adds the contract (``work``), the sender boundary (``transport``), the
checker and the educator tools. Modules import what they need; importing the package
itself stays cheap so the checker's observer starts fast.
"""

__version__ = "0.7.0"
