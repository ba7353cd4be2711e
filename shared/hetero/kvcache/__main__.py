"""`python -m hetero.kvcache TRACE.jsonl ...`: the trace replay CLI (`hetero.kvcache.cli`)."""

import sys

from hetero.kvcache.cli import main

if __name__ == "__main__":
    sys.exit(main())
