"""`python -m hetero.overload`: runs the command line (hetero.overload.cli)."""

import sys

from hetero.overload.cli import main_or_missing

sys.exit(main_or_missing())
