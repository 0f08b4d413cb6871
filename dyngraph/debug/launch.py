"""``python -P .../dyngraph/debug/launch.py --connect ADDRESS SCRIPT [ARGS...]``: how a
session starts its child (see ``child.py``).

Run as a file with ``-P``, not with ``python -m dyngraph.debug.child``: ``-m`` puts the
working directory first on ``sys.path``, and in a dyngraph checkout (the README's quick
start: ``pip install .``, then ``dyngraph demo``) that is a second copy of the package,
which the child would import instead of the one the session runs. Here the package comes
from where this file lies, and nothing else is added to ``sys.path``: the child then makes
the script's folder its first entry, as ``python script.py`` would. This file being inside
the package, its frame is never taken for the user's.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    from dyngraph.debug.child import main

    main()
