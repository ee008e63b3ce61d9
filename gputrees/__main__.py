"""``python -m gputrees``: the command line (see :mod:`gputrees.cli`)."""

import sys

from .cli import main

sys.exit(main())
