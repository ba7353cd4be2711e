"""What a sandboxed child may read: the one allow-list every isolation layer is built from.

bubblewrap binds these paths (and nothing else of the host) into the child's new root, Landlock grants
read access to them (and to nothing else), and the page-cache reset (`pagecache`) sweeps their files.
They are computed here, once per grader process, from the interpreter and the package, never listed:

- the interpreter: `sys.executable` and every link on the way to the binary, the standard library
  (`sysconfig`'s stdlib folder, lib-dynload included, but `STDLIB_LEFT_OUT`) and libpython where the
  interpreter is shared;
- the venv: pyvenv.cfg and the installed files of the distributions the student's environment holds:
  the third-party modules `hetero` imports (the student copy's dependencies; the build checks each has
  a pin) and everything they require, by their metadata; not the site-packages folder itself, nor its
  .pth files: the child finds these packages through a site folder of links (`site_links`);
- `hetero` (its folder);
- the shared libraries: the multiarch library folders, /lib64, the C.UTF-8 locale, ld.so.cache, the
  time zone /etc/localtime names (with its link chain);
- devices (`DEVICES`, read and write), /proc/cpuinfo and /sys/devices/system/cpu (the processor's
  description, which torch's cpuinfo reads at import and complains on stderr without);

The grader's own package (hidden cases, stored expected values) is never among them, nor is anything
of the checkout beside `hetero`; `check()` refuses an allow-list that reaches it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

AUTOGRADER_DIR = Path(__file__).resolve().parents[2]  # the grader's own package: never readable by a child

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")

# Shared libraries and what the C library reads at start-up, where they exist on this machine.
SYSTEM_FOLDERS = (
    "/lib64",
    "/usr/lib64",
    "/usr/lib/locale/C.utf8",
    "/usr/lib/locale/C.UTF-8",
    "/sys/devices/system/cpu",
)
SYSTEM_FILES = ("/etc/ld.so.cache", "/proc/cpuinfo")


@dataclass(frozen=True)
class AllowList:
    read: tuple[str, ...]  # files and folders (with everything below) the child may read and execute
    packages: tuple[str, ...]  # what the child's own site folder links to: the allowed site-packages entries, hetero
    devices: tuple[str, ...]  # character devices it may read and write
    listed: tuple[str, ...] = ()  # folders whose names (not their files) it may list: the standard library's


def link_chain(path: str) -> list[str]:
    """`path` and every path its symlinks (at any component) lead through, to the file itself."""
    chain = [os.path.abspath(path)]
    current = chain[0]
    for _ in range(40):
        parent, name = os.path.split(current)
        real_parent = os.path.realpath(parent)
        candidate = os.path.join(real_parent, name)
        if candidate != current:
            chain.append(candidate)
        try:
            target = os.readlink(candidate)
        except OSError:
            break
        current = os.path.normpath(os.path.join(real_parent, target))
        chain.append(current)
    return list(dict.fromkeys(chain))


def _hetero_dir() -> str:
    import hetero

    return os.path.dirname(os.path.abspath(hetero.__file__))


IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+([A-Za-z_]\w*)[\w.]*[ \t]+import|import[ \t]+([\w., \t]+))", re.M)


def _imported_modules(folder: str) -> set[str]:
    """Top-level third-party module names imported anywhere under `folder` (import lines read as text: an
    import named in a docstring only widens the list by an installed package, never narrows it; a full
    parse of hetero cost 1.5 s per grader process)."""
    stdlib = set(sys.stdlib_module_names)
    names: set[str] = set()
    for path in Path(folder).rglob("*.py"):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for source, listed in IMPORT_LINE.findall(text):
            if source:
                names.add(source)
            for item in listed.split(","):
                name = item.strip().split(" ")[0].split(".")[0]
                if name:
                    names.add(name)
    return {n for n in names if n not in stdlib and n not in ("hetero", "autograder") and n.isidentifier()}


def _requirement_names(
    dist: importlib.metadata.Distribution, extras: frozenset[str]
) -> list[tuple[str, frozenset[str]]]:
    """(name, extras asked for) of the distributions `dist` requires, outside its extras but `extras`.
    Other markers are not evaluated: a requirement whose marker leaves it out here is simply not
    installed, and is skipped by `distributions`."""
    names = []
    for req in dist.requires or []:
        spec, _, marker = req.partition(";")
        wanted = re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
        if wanted and not extras.intersection(wanted):
            continue
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", spec)
        if match:
            asked = frozenset(e.strip() for e in (match.group(2) or "").split(",") if e.strip())
            names.append((match.group(1), asked))
    return names


def distributions(tools: tuple[str, ...] = ()) -> list[importlib.metadata.Distribution]:
    """The installed distributions a child may use: those providing `hetero`'s third-party imports, the
    distributions named in `tools` (a trusted tool run on a student's files: otter-grader), and,
    recursively, everything they require (as installed here), with the extras they ask for."""
    todo: list[tuple[str, frozenset[str]]] = [(t, frozenset()) for t in tools]
    providers: Mapping[str, list[str]] | None = None
    for module in sorted(_imported_modules(_hetero_dir())):
        try:
            importlib.metadata.distribution(module)  # most import names are their distribution's name
            todo.append((module, frozenset()))
        except importlib.metadata.PackageNotFoundError:
            providers = providers if providers is not None else importlib.metadata.packages_distributions()
            todo.extend((name, frozenset()) for name in providers.get(module, []))
    seen: dict[str, importlib.metadata.Distribution] = {}
    done: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if (key, extras) in done:
            continue
        done.add((key, extras))
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        seen[key] = dist
        todo.extend(_requirement_names(dist, extras))
    return [seen[k] for k in sorted(seen)]


def _installed_entries(dist: importlib.metadata.Distribution, site: str) -> set[str]:
    """The top-level entries (folders, modules, the .dist-info) of `dist` in `site`, from its RECORD, and the
    files it installed outside `site` but inside the venv (a kernel spec under share/jupyter, a script)."""
    entries = set()
    for line in (dist.read_text("RECORD") or "").splitlines():
        name = line.split(",", 1)[0]
        first = name.split("/", 1)[0]
        if first == "..":
            outside = os.path.normpath(os.path.join(site, name))
            if _inside(outside, sys.prefix):
                entries.add(outside)
        elif first and first != ".":
            entries.add(os.path.join(site, first))
    return entries


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


# Folders of the standard library's folder that are not the standard library a child runs: the base
# interpreter's own installed packages (a venv never uses them; pyenv's held 43,000 files here) and the
# standard library's own test suite.
STDLIB_LEFT_OUT = ("site-packages", "dist-packages", "test")


def stdlib_folder() -> str:
    return os.path.normpath(sysconfig.get_paths()["stdlib"])


def _interpreter_paths() -> set[str]:
    paths = set(link_chain(sys.executable))
    stdlib = stdlib_folder()
    paths |= {os.path.join(stdlib, name) for name in os.listdir(stdlib) if name not in STDLIB_LEFT_OUT}
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        libdir, soname = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")
        if libdir and soname and os.path.exists(os.path.join(libdir, soname)):
            paths.update(link_chain(os.path.join(libdir, soname)))
    cfg = os.path.join(sys.prefix, "pyvenv.cfg")
    if os.path.exists(cfg):
        paths.add(cfg)
    return paths


def _system_paths() -> set[str]:
    paths = set()
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    folders = list(SYSTEM_FOLDERS)
    if multiarch:
        folders += [f"/lib/{multiarch}", f"/usr/lib/{multiarch}"]
    for folder in folders:
        if os.path.isdir(folder):
            paths.update(link_chain(folder))
    for file in SYSTEM_FILES:
        if os.path.exists(file):
            paths.update(link_chain(file))
    if os.path.lexists("/etc/localtime"):
        paths.update(p for p in link_chain("/etc/localtime") if os.path.exists(p))
    return paths


@functools.lru_cache(maxsize=4)
def compute(tools: tuple[str, ...] = ()) -> AllowList:
    """The allow-list of this grader process (see the module docstring), with the installed files of `tools`
    and what they require where a tool runs on a student's files; checked by `check`."""
    packages = {_hetero_dir()}
    for dist in distributions(tools):
        base = os.path.normpath(str(dist.locate_file("")))
        packages |= {e for e in _installed_entries(dist, base) if os.path.lexists(e) and not e.endswith(".pth")}
    read = {os.path.normpath(p) for p in _interpreter_paths() | _system_paths() | packages if os.path.lexists(p)}
    allow = AllowList(
        read=tuple(_outermost(read)),
        packages=tuple(sorted(packages)),
        devices=tuple(d for d in DEVICES if os.path.exists(d)),
        listed=(sysconfig.get_paths()["stdlib"],),  # the import system lists it to find a module
    )
    check(allow)
    return allow


def site_links(allow: AllowList | None = None) -> dict[str, str]:
    """{name: target}: the child's own site folder, a folder of links to the allowed site-packages entries
    and hetero, which it puts first on sys.path. The venv's site-packages cannot be listed by a child (names
    of packages it may not read would make optional imports fail on a denied read), so only this folder
    says what is installed. Files the distributions installed elsewhere (scripts, kernel specs) are readable
    but not linked: a script named like its package would hide the package."""
    allow = allow or compute()
    sites = {os.path.normpath(p) for p in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])}
    links: dict[str, str] = {}
    for path in allow.packages:
        name = os.path.basename(path)
        in_site = os.path.dirname(path) in sites or path == _hetero_dir()
        if name == "__pycache__" or name in links or not in_site:
            continue
        links[name] = path
    return links


def _outermost(paths: set[str]) -> list[str]:
    """`paths` without those inside another of them."""
    kept: list[str] = []
    for path in sorted(paths, key=lambda p: (p.count("/"), p)):
        if not any(_inside(path, k) for k in kept):
            kept.append(path)
    return kept


def check(allow: AllowList) -> None:
    """Refuse an allow-list that lets a child read the grader's own package (hidden cases, expected values)."""
    secret = str(AUTOGRADER_DIR)
    for path in allow.read:
        real = os.path.realpath(path)
        if _inside(secret, real) or _inside(real, secret):
            raise RuntimeError(f"the sandbox's allow-list would expose the grader's package {secret} (through {path})")


def files(allow: AllowList | None = None) -> list[str]:
    """Every regular file a child may read (what the page-cache reset sweeps), links not followed."""
    allow = allow or compute()
    found: list[str] = []
    for root in allow.read:
        if os.path.isfile(root) and not os.path.islink(root):
            found.append(root)
            continue
        for folder, _, names in os.walk(root):
            found.extend(os.path.join(folder, n) for n in names)
    return found
