"""Stand-in graders for the grade-all tests: what a fake `python -m autograder grade` must answer.

grade-all runs each submission's public phase (`grade SUB --phase public --state STATE ...`), takes
the seal of the state it left, then runs the hidden phase (`grade SUB --out OUT --phase hidden ...`),
which writes results.json. A stand-in's own logic decides only the results; `PUBLIC_PHASE` is the
part every stand-in shares: it seals an empty state and exits. Insert it with `{public_phase}` in a
template formatted with `public_phase=PUBLIC_PHASE` (after `import hashlib, os, sys`).
"""

PUBLIC_PHASE = """\
if "--phase" in sys.argv and sys.argv[sys.argv.index("--phase") + 1] == "public":
    state = sys.argv[sys.argv.index("--state") + 1]  # grade-all's public phase: seal an empty state
    os.makedirs(state, mode=0o700)
    with open(os.path.join(state, "public.json"), "wb") as fh:
        fh.write(b"{}")
    with open(os.path.join(state, "seal"), "w") as fh:
        fh.write(hashlib.sha256(b"{}").hexdigest())
    sys.exit(0)
"""
