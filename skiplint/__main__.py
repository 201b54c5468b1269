"""`python -m skiplint`: the CLI.

Under `-m`, Python puts the directory it was started from first on sys.path. The language server
runs in the user's workspace and imports nothing of it: that entry goes before anything else is
imported, so that a workspace's `typing_extensions.py` (or `lsprotocol.py`) is not taken for the
library (the `skiplint` entry point never has it). Other commands keep it: `skiplint verify
module:Model` imports the user's module from there.
"""

import os
import sys

if sys.argv[1:2] == ["server"] and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from skiplint.cli import main  # noqa: E402

sys.exit(main())
