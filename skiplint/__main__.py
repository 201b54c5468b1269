import sys

from skiplint.cli import main

sys.exit(main())
