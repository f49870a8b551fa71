"""``python -m lucy_runtime.cli``: the ``lucy`` command."""

import sys

from .main import main

sys.exit(main())
