"""``python -m dyngraph`` is the ``dyngraph`` command."""

import sys

from .cli import main

sys.exit(main())
