"""Install the pinned torch, alone, into the Python that runs this script: its CPU build on Linux.

    <venv>/bin/python shared/hetero/install_torch.py [--quiet] [--dry-run] [--rerun CMD] [--other-python CMD] PIN_FILE

One mechanism for the three set-ups that install torch: the instructor's `make setup` (PIN_FILE
locks/instructor.txt), the student copy's `make setup` (its pyproject.toml) and the Gradescope image's
setup.sh (requirements-torch.txt). Standard library only, Python 3.10 to 3.13: it runs in a fresh venv
before anything else is installed. It is run by path, so it works before `hetero` is installed.

Where torch comes from:
- Linux: PyTorch's CPU index (DEFAULT_INDEX_URL), for torch alone (`pip install --no-deps
  --index-url ...`). PyPI's Linux wheel bundles CUDA: about 1.4 GB to download and a 5 GB venv, against
  about 190 MB and 1.3 GB for the CPU build; nothing here uses a GPU.
- macOS and Windows: pip's configured index (PyPI), whose wheels there are already CPU-only.
- `A2_TORCH_INDEX_URL` set and not empty: that index, on every platform (a mirror of PyTorch's CPU
  index, or a local one: `file:///path/to/simple`, a folder holding `torch/index.html`).
- `A2_TORCH_INDEX_URL` set to the empty string: pip's configured index, on every platform (on Linux:
  PyPI's CUDA build, the sizes above).

Before pip runs, the index's torch page is read: when it cannot be reached, or offers no wheel of the
pinned version for this Python and platform, the script says so and what to do, and exits with status
1 without calling pip (pip would report a missing version or a resolver conflict instead). torch's own
dependencies are left to the caller's next, resolved pip call (`pip install -e .`, or the lock), which
keeps the torch installed here because it satisfies the pin (`torch==2.13.0` admits `2.13.0+cpu`).
A torch of the pinned version already installed is kept as it is (no network). When PyTorch's own
index (not one named by A2_TORCH_INDEX_URL) cannot be reached and pip's configured find-links
(PIP_FIND_LINKS) hold a CPU wheel of the pin for this Python, that wheel is installed instead.
"""

from __future__ import annotations

import argparse
import html
import importlib
import importlib.metadata
import os
import platform
import re
import shlex
import ssl
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_INDEX_URL = "https://download.pytorch.org/whl/cpu"
ENV_VAR = "A2_TORCH_INDEX_URL"
# Measured for torch 2.13.0 on Linux x86_64 (issue 22): PyPI's CUDA build against the CPU build.
PYPI_LINUX_SIZE = "about 1.4 GB to download and a 5 GB venv"
CPU_LINUX_SIZE = "about 190 MB to download and a 1.3 GB venv"
PIN_RE = re.compile(r"""^\s*["']?torch\s*==\s*([0-9][0-9A-Za-z.+!_-]*)""", re.M)
PROBE_ATTEMPTS = 3
PROBE_TIMEOUT_S = 30.0


class SetupError(Exception):
    """torch cannot be installed as planned; the message says why and what to do."""


class Unreachable(SetupError):
    def __init__(self, index_url: str, detail: str) -> None:
        super().__init__(detail)
        self.index_url, self.detail = index_url, detail


class Unusable(Unreachable):
    """Reached, but not an index that serves torch."""


class NoWheel(SetupError):
    def __init__(self, index_url: str, detail: str, offered: list[str]) -> None:
        super().__init__(detail)
        self.index_url, self.detail, self.offered = index_url, detail, offered


@dataclass(frozen=True)
class Plan:
    index_url: str | None  # None: pip's configured index (PyPI unless the user configured another)
    why: str  # one line for the log


@dataclass(frozen=True)
class Target:
    """What a torch wheel must fit: this interpreter and platform."""

    python: tuple[int, int]  # (3, 11)
    free_threaded: bool
    platform: str  # sys.platform: linux, darwin, win32
    machine: str  # platform.machine(): x86_64, aarch64, arm64, AMD64

    @classmethod
    def here(cls) -> Target:
        free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
        return cls((sys.version_info.major, sys.version_info.minor), free_threaded, sys.platform, platform.machine())

    def describe(self) -> str:
        return f"CPython {self.python[0]}.{self.python[1]}{'t' if self.free_threaded else ''} on {self.platform} {self.machine}"


def plan(target: Target, environ: Mapping[str, str]) -> Plan:
    """Which index torch comes from (the decision only; nothing is fetched)."""
    override = environ.get(ENV_VAR)
    if override is not None:
        if override.strip():
            return Plan(override.strip(), f"{ENV_VAR} is set")
        return Plan(None, f"{ENV_VAR} is empty: pip's configured index")
    if target.platform.startswith("linux"):
        return Plan(DEFAULT_INDEX_URL, "Linux: PyTorch's CPU index (PyPI's Linux wheel bundles CUDA)")
    return Plan(None, f"{target.platform}: PyPI's wheel is CPU-only there")


def read_pin(path: Path) -> str:
    """The exact torch version pinned in `path` (a requirements or lock file, or a pyproject.toml)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SetupError(f"cannot read the torch pin from {path}: {exc}") from exc
    versions = sorted(set(PIN_RE.findall(text)))
    if len(versions) != 1:
        raise SetupError(f"{path} must pin torch exactly once (torch==X.Y.Z); found {versions or 'no pin'}")
    return versions[0]


def installed_version() -> str | None:
    """The version of the torch installed for this interpreter, if any."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def satisfies(version: str, pin: str) -> bool:
    """PEP 440 `==pin`: a local label (`+cpu`) is ignored unless the pin has one."""
    if "+" in pin:
        return version == pin
    return version.split("+", 1)[0] == pin


# ---------------------------------------------------------------------------------------------
# The index: its torch page and the wheels it lists.


def project_url(index_url: str) -> str:
    """The PEP 503 page of torch under `index_url` (a local folder: its torch/index.html, as pip reads it)."""
    base = index_url if "://" in index_url else Path(index_url).resolve().as_uri()
    return base.rstrip("/") + "/torch/"


def _local_folder(index_url: str) -> Path | None:
    """The folder a `file:` URL (or a plain path) names; None for a network index."""
    if "://" not in index_url:
        return Path(index_url)
    parsed = urllib.parse.urlparse(index_url)
    return Path(urllib.request.url2pathname(parsed.path)) if parsed.scheme == "file" else None


def _ssl_context() -> ssl.SSLContext:
    """The system's certificates, plus pip's own bundle and a PIP_CERT file, as pip would trust them."""
    context = ssl.create_default_context()
    extra = [os.environ.get("PIP_CERT"), os.environ.get("REQUESTS_CA_BUNDLE")]
    try:  # pip's own bundle, looked up at run time: pip is not a dependency of what ships
        extra.append(importlib.import_module("pip._vendor.certifi").where())
    except (ImportError, AttributeError):  # no pip, or a pip without certifi: the system store alone
        pass
    for cafile in extra:
        if cafile and os.path.isfile(cafile):
            try:
                context.load_verify_locations(cafile=cafile)
            except (OSError, ssl.SSLError):
                pass
    return context


def fetch(url: str) -> str:
    """The text at `url`; a `file:` folder gives its index.html. Raises OSError (URLError included)."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        path = Path(urllib.request.url2pathname(parsed.path))
        return (path / "index.html" if path.is_dir() else path).read_text(encoding="utf-8")
    handlers: list[urllib.request.BaseHandler] = [urllib.request.HTTPSHandler(context=_ssl_context())]
    if os.environ.get("PIP_PROXY"):
        handlers.append(
            urllib.request.ProxyHandler({"http": os.environ["PIP_PROXY"], "https": os.environ["PIP_PROXY"]})
        )
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, headers={"Accept": "text/html", "User-Agent": "a2-install-torch"})
    with opener.open(request, timeout=PROBE_TIMEOUT_S) as response:
        data: bytes = response.read()
        return data.decode(response.headers.get_content_charset() or "utf-8", errors="replace")


def wheel_names(page: str) -> list[str]:
    """The file names of the wheels a PEP 503 page (or a plain folder listing) links to."""
    names = []
    for href in re.findall(r"""href\s*=\s*["']([^"']+)["']""", page, flags=re.I):
        name = urllib.parse.unquote(html.unescape(href).split("#", 1)[0].split("?", 1)[0].rsplit("/", 1)[-1])
        if name.endswith(".whl") and name not in names:
            names.append(name)
    return names


def _platform_fits(tag: str, target: Target) -> bool:
    machine = target.machine.lower()
    if target.platform.startswith("linux"):
        machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
        return tag.startswith(("manylinux", "linux", "musllinux")) and tag.endswith("_" + machine)
    if target.platform == "darwin":
        return tag.startswith("macosx_") and (tag.endswith("_" + machine) or tag.endswith("_universal2"))
    if target.platform == "win32":
        return tag == {"amd64": "win_amd64", "x86_64": "win_amd64", "arm64": "win_arm64"}.get(machine, "win32")
    return False


def fits(name: str, pin: str, target: Target) -> bool:
    """Whether the wheel file `name` is torch at the pinned version for `target`."""
    parts = name[: -len(".whl")].split("-")
    if len(parts) not in (5, 6) or parts[0].lower() != "torch" or not satisfies(parts[1], pin):
        return False
    pythons, abis, platforms = (set(p.split(".")) for p in parts[-3:])
    major, minor = target.python
    abi = f"cp{major}{minor}{'t' if target.free_threaded else ''}"
    return (
        bool(pythons & {f"cp{major}{minor}", f"py{major}", f"py{major}{minor}"})
        and bool(abis & {abi, "abi3", "none"})
        and any(_platform_fits(tag, target) for tag in platforms)
    )


def offered_pythons(names: list[str], pin: str, target: Target) -> list[str]:
    """The Pythons (cp311, cp313t, ...) the listed wheels of the pinned version are built for, on the
    target's platform."""
    tags = set()
    for name in names:
        parts = name[: -len(".whl")].split("-")
        if len(parts) not in (5, 6) or parts[0].lower() != "torch" or not satisfies(parts[1], pin):
            continue
        if any(_platform_fits(tag, target) for tag in parts[-1].split(".")):
            abis = [a for a in parts[-2].split(".") if a.startswith("cp")]
            tags.update(abis or parts[-3].split("."))
    return sorted(tags, key=lambda t: (len(t), t))


def check_index(index_url: str, pin: str, target: Target, fetcher: Callable[[str], str] | None = None) -> list[str]:
    """The wheels of torch==pin for `target` that the index lists (read with `fetcher`, default `fetch`);
    SetupError when it cannot be reached, has no torch page, or lists no such wheel."""
    fetcher = fetcher or fetch
    url = project_url(index_url)
    local = _local_folder(index_url)
    if local is not None and local.is_dir() and not (local / "torch").is_dir():
        raise Unusable(
            index_url,
            f"{local} is a folder but not a package index: it has no torch/index.html (a local index is a folder "
            "holding torch/index.html, which links the wheels; a folder of wheels goes to PIP_FIND_LINKS instead)",
        )
    page: str | None = None
    error: Exception | None = None
    for attempt in range(PROBE_ATTEMPTS):
        try:
            page = fetcher(url)
            break
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise Unusable(index_url, f"it has no torch page ({url}: HTTP 404)") from exc
            error = exc
        except (OSError, ValueError) as exc:  # URLError, a refused connection, a missing folder, a bad URL
            error = exc
            if isinstance(exc, (FileNotFoundError, ValueError)):
                break  # retrying does not help
        if attempt + 1 < PROBE_ATTEMPTS:
            time.sleep(1.0 + attempt)
    if page is None:
        raise Unreachable(index_url, f"{type(error).__name__}: {error}")
    names = wheel_names(page)
    found = [n for n in names if fits(n, pin, target)]
    if not found:
        offered = offered_pythons(names, pin, target)
        if offered:
            has = f"it offers torch {pin} for {', '.join(offered)} only"
        elif any(n.lower().startswith(f"torch-{pin}") for n in names):
            has = f"it offers torch {pin} for other platforms only"
        else:
            has = f"it lists no torch {pin} wheel at all ({len(names)} other wheels)"
        raise NoWheel(index_url, f"no torch {pin} wheel for {target.describe()}: {has}", offered)
    return found


# ---------------------------------------------------------------------------------------------
# Messages: what went wrong and what to do, never pip's resolver output.

RULE = "=" * 100


def _rerun_with(value: str, rerun: str) -> str:
    return f"{ENV_VAR}={value} {rerun}".rstrip()


def unreachable_message(exc: Unreachable, pin: str, rerun: str) -> str:
    default = exc.index_url == DEFAULT_INDEX_URL
    what = "PyTorch's CPU index" if default else f"the torch index that {ENV_VAR} names"
    cause = "does not serve torch" if isinstance(exc, Unusable) else "cannot be reached"
    lines = [
        RULE,
        f"torch=={pin} was NOT installed: {what} {cause}.",
        f"  index: {exc.index_url}",
        f"  error: {exc.detail}",
        f"torch's CPU build comes from that index on Linux ({CPU_LINUX_SIZE}). What you can do:",
        "  1. check the network (a proxy: set HTTPS_PROXY, which this script and pip both use), then run again:",
        f"       {rerun}",
        "  2. or use a mirror of PyTorch's CPU index, or a local copy (a folder holding torch/index.html):",
        f"       {_rerun_with('https://your.mirror/whl/cpu', rerun)}",
        f"       {_rerun_with('file:///path/to/simple', rerun)}",
        "  3. or take torch from PyPI (pip's configured index) instead:",
        f"       {_rerun_with('', rerun)}",
        f"     On Linux that is PyPI's CUDA build: {PYPI_LINUX_SIZE} (nothing here uses the GPU);",
        "     on macOS and Windows PyPI's wheel is the CPU build.",
        RULE,
    ]
    return "\n".join(lines)


def _python_names(tags: list[str]) -> list[str]:
    """cp311 -> 3.11, cp313t -> 3.13t (free-threaded)."""
    return [f"{t[2]}.{t[3:]}" for t in tags if re.fullmatch(r"cp3\d+t?", t)]


def no_wheel_message(exc: NoWheel, pin: str, rerun: str, other_python: str) -> str:
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    pythons = _python_names(exc.offered)
    where = f"; it has one for Python {', '.join(pythons)} only" if pythons else ""
    lines = [
        RULE,
        f"torch=={pin} was NOT installed: the index has no wheel for this Python ({here}){where}.",
        f"  index: {exc.index_url}",
        f"  {exc.detail}",
        "What you can do:",
    ]
    offered = [t for t in exc.offered if re.fullmatch(r"cp3\d+", t)]
    if offered:
        version = f"{offered[-1][2]}.{offered[-1][3:]}"
        hint = other_python.format(v=version) if other_python else f"use Python {version} for this venv"
        lines += ["  1. use a Python the index has a wheel for, e.g.:", f"       {hint}"]
        if os.environ.get(ENV_VAR):  # the index the user named: that command needs it again
            lines += [f"     with {ENV_VAR}={shlex.quote(os.environ[ENV_VAR])} set for it, as now"]
    else:
        lines += ["  1. check that the index is the one you meant (a copy of PyTorch's CPU index)"]
    lines += [
        f"  2. or another index that has one ({ENV_VAR}=URL), or PyPI's build (pip's configured index):",
        f"       {_rerun_with('', rerun)}",
        f"     On Linux that is PyPI's CUDA build: {PYPI_LINUX_SIZE}.",
        RULE,
    ]
    return "\n".join(lines)


def pip_failed_message(chosen: Plan, pin: str, status: int, rerun: str) -> str:
    lines = [RULE, f"torch=={pin} was NOT installed: pip failed (status {status}; its output is above)."]
    if chosen.index_url is None:
        lines += [
            "  It looked in pip's configured index (PyPI unless configured otherwise). Run again when it is",
            f"  reachable, or name a torch index: {_rerun_with('https://download.pytorch.org/whl/cpu', rerun)}",
        ]
    else:
        lines += [
            f"  The index {chosen.index_url} lists a wheel for this Python. Run again: {rerun}",
            f"  or take torch from PyPI (pip's configured index): {_rerun_with('', rerun)}",
            f"  (on Linux PyPI's CUDA build: {PYPI_LINUX_SIZE})",
        ]
    return "\n".join(lines + [RULE])


# ---------------------------------------------------------------------------------------------


def local_cpu_wheel(pin: str, target: Target, environ: Mapping[str, str]) -> Path | None:
    """A CPU build of torch==pin for `target` in a local folder of pip's configured find-links
    (PIP_FIND_LINKS, space-separated), or None: what a machine without PyTorch's index may hold."""
    for entry in environ.get("PIP_FIND_LINKS", "").split():
        folder = Path(urllib.parse.urlparse(entry).path if entry.startswith("file:") else entry)
        if not folder.is_dir():
            continue
        for wheel in sorted(folder.glob("torch-*.whl")):
            if "+cpu" in wheel.name and fits(wheel.name, pin, target):
                return wheel
    return None


def pip_command(pin: str, chosen: Plan, quiet: bool) -> list[str]:
    command = [sys.executable, "-m", "pip", "install", "--no-deps"]
    if quiet:
        command += ["--quiet", "--no-input"]
    if chosen.index_url is not None:
        url = chosen.index_url if "://" in chosen.index_url else Path(chosen.index_url).resolve().as_uri()
        command += ["--index-url", url]
    return command + [f"torch=={pin}"]


def local_command(wheel: Path, quiet: bool) -> list[str]:
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index"]
    return command + (["--quiet", "--no-input"] if quiet else []) + [str(wheel)]


def say(text: str) -> None:
    print(f"[install_torch] {text}", flush=True)


def main(argv: list[str] | None = None, run: Callable[[list[str]], int] = subprocess.call) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("pin_file", type=Path, help="requirements, lock or pyproject.toml file that pins torch==X")
    parser.add_argument("--quiet", action="store_true", help="pass --quiet to pip")
    parser.add_argument(
        "--dry-run", action="store_true", help="check the index and print pip's command; install nothing"
    )
    parser.add_argument("--rerun", default="make setup", help="the command that runs this set-up again (for messages)")
    parser.add_argument(
        "--other-python",
        default="",
        help="how to start over with Python {v} (for messages), e.g. 'make setup PYTHON=python{v}'",
    )
    args = parser.parse_args(argv)
    try:
        pin = read_pin(args.pin_file)
        have = installed_version()
        if have is not None and satisfies(have, pin) and not args.dry_run:
            say(f"torch {have} is already installed: kept (pip uninstall torch, then run again, to replace it)")
            return 0
        target = Target.here()
        chosen = plan(target, os.environ)
        where = chosen.index_url or "pip's configured index (PyPI unless configured otherwise)"
        say(f"torch=={pin} for {target.describe()} from {where}: {chosen.why}")
        local = None
        if chosen.index_url is not None:
            try:
                found = check_index(chosen.index_url, pin, target)
                say(f"the index lists {found[0]}" + (f" (+{len(found) - 1} more)" if len(found) > 1 else ""))
            except Unreachable:
                # PyTorch's own index only (an explicit A2_TORCH_INDEX_URL is the user's choice): a CPU
                # wheel of the pin in pip's configured find-links does the same job.
                local = local_cpu_wheel(pin, target, os.environ) if chosen.index_url == DEFAULT_INDEX_URL else None
                if local is None:
                    raise
                say(f"PyTorch's CPU index cannot be reached; using the CPU wheel {local} (PIP_FIND_LINKS)")
        command = pip_command(pin, chosen, args.quiet) if local is None else local_command(local, args.quiet)
        if args.dry_run:
            say("would run: " + " ".join(command))
            return 0
        status = run(command)
        if status != 0:
            print(pip_failed_message(chosen, pin, status, args.rerun), file=sys.stderr, flush=True)
            return 1
        say(f"installed torch {installed_version()}")
        return 0
    except NoWheel as exc:
        print(no_wheel_message(exc, pin, args.rerun, args.other_python), file=sys.stderr, flush=True)
    except Unreachable as exc:
        print(unreachable_message(exc, pin, args.rerun), file=sys.stderr, flush=True)
    except SetupError as exc:
        print(f"[install_torch] error: {exc}", file=sys.stderr, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
