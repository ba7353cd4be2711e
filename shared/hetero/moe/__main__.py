"""`python -m hetero.moe`: the command line of `hetero.moe.cli`."""

import sys

from hetero.moe.cli import main

sys.exit(main())
