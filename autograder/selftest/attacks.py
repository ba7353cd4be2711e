"""Builders of hostile submissions too large or too odd to commit, for the tests and the benchmarks.

Zip bombs, zips with damaged members (patched after `zipfile` wrote a valid archive), folder trees
deeper than Python's recursion limit and the remover they need, pairs of colluding students for
one batch (`colluding_pair`, from autograder/fixtures/adversarial/colluding_pairs), and a copied file
disguised as a copier would (`disguised_copy`: the similarity check must still flag it). Each builder's
docstring says what the submission deserves when graded (exercises ex01 and ex02 hold the answer key
where they are intact).
"""

from __future__ import annotations

import ast
import os
import struct
import zipfile
from pathlib import Path

from autograder.core.manifest import BY_ID, ROOT

DEEP_LEVELS = 1100  # deeper than Python's default recursion limit (1000): a recursive walk would crash
BOMB_BYTES = 256 * 2**20  # one zip member expanding to 256 MiB
BOMB_COPIES = 100  # more copies of the exercise file, 3 MiB each: 300 MiB if every copy were
# extracted; the whole zip is about 2.5 MB
EX01_FILE, EX02_FILE = BY_ID["ex01"].filename, BY_ID["ex02"].filename


def answer_key(ex_id: str) -> bytes:
    return (ROOT / "solutions" / BY_ID[ex_id].filename).read_bytes()


def _central_headers(data: bytes) -> dict[str, int]:
    """Offset of each member's central-directory header, by name."""
    offsets = {}
    end = data.rfind(b"PK\x05\x06")
    (start,) = struct.unpack("<I", data[end + 16 : end + 20])
    pos = start
    while data[pos : pos + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack("<HHH", data[pos + 28 : pos + 34])
        offsets[data[pos + 46 : pos + 46 + name_len].decode()] = pos
        pos += 46 + name_len + extra_len + comment_len
    return offsets


def damaged_zip(path: Path) -> Path:
    """ex01 intact; ex02 flagged encrypted; ex03 with a flipped data byte (bad CRC); ex04 with method 99.

    Deserved: ex01 full marks, 0 for ex02-ex04, each with a sentence saying what is wrong with it.
    """
    names = {ex: BY_ID[ex].filename for ex in ("ex01", "ex02", "ex03", "ex04")}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for ex_id, name in names.items():
            zf.writestr(f"work/{name}", answer_key(ex_id) if ex_id in ("ex01", "ex02") else b"x = 1\n" * 50)
        infos = {i.filename.split("/")[-1]: i for i in zf.infolist()}
    data = bytearray(path.read_bytes())
    central = _central_headers(bytes(data))
    for ex_id, name in names.items():
        cpos, lpos = central[f"work/{name}"], infos[name].header_offset
        if ex_id == "ex02":  # general-purpose flag bit 0: encrypted
            data[cpos + 8] |= 0x1
            data[lpos + 6] |= 0x1
        elif ex_id == "ex03":  # a byte of the stored data: the CRC no longer matches
            name_len, extra_len = struct.unpack("<HH", data[lpos + 26 : lpos + 30])
            data[lpos + 30 + name_len + extra_len + 10] ^= 0xFF
        elif ex_id == "ex04":  # compression method 99: no reader knows it
            data[cpos + 10 : cpos + 12] = struct.pack("<H", 99)
            data[lpos + 8 : lpos + 10] = struct.pack("<H", 99)
    path.write_bytes(bytes(data))
    return path


def bomb_zip(path: Path, copies: int = BOMB_COPIES) -> Path:
    """An exercise-named member expanding to BOMB_BYTES, `copies` more copies of the exercise file of
    3 MiB each in other folders (extracting every copy is what fills a disk), and the ex02 answer key.

    Deserved: 0 for ex01 ("larger than 2 MiB"), ex02 full marks.
    """
    chunk = b"#" * 2**20
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:  # level 1: built in ~2 s
        with zf.open(f"a/{EX01_FILE}", "w", force_zip64=True) as fh:
            for _ in range(BOMB_BYTES // 2**20):
                fh.write(chunk)
        for i in range(copies):
            zf.writestr(f"copies/{i}/{EX01_FILE}", chunk * 3)
        zf.writestr(EX02_FILE, answer_key("ex02"))
    return path


def deep_tree(top: Path, levels: int = DEEP_LEVELS) -> Path:
    """`top` with a chain of `levels` nested folders holding the ex02 answer key at the bottom.

    Deserved: 0 for ex02 (below the search depth, said in the notes); files near the top graded.
    """
    top.mkdir(parents=True, exist_ok=True)
    current = top
    for _ in range(levels):  # one level at a time: os.makedirs recurses once per level
        current = current / "d"
        current.mkdir()
    (current / EX02_FILE).write_bytes(answer_key("ex02"))
    return top


def very_deep_tree(top: Path, levels: int = 3000, name: str = "d" * 40) -> Path:
    """`top` with a chain of `levels` folders named `name`, made relative to open folders (the whole
    path is far longer than PATH_MAX); one folder near the bottom is left without any permission."""
    top.mkdir(parents=True, exist_ok=True)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(levels):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
            if level % 500 == 0:
                with open(os.open("f.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as fh:
                    fh.write("x = 1\n")
        os.mkdir("locked", mode=0o000, dir_fd=fd)
    finally:
        os.close(fd)
    return top


def remove_deep(top: Path) -> None:
    """Remove a tree of any depth (the trees above are too deep for shutil.rmtree's recursion)."""
    from autograder.runtime.sandbox.users import remove_tree

    remove_tree(top)


COLLUDING_PAIRS = ROOT / "autograder" / "fixtures" / "adversarial" / "colluding_pairs"
# Kernel state two sandboxes of one batch could share, in the words of colluding_pairs/channels.py
COLLUDING_CHANNELS = ("fcntl", "ofd", "flock", "inotify", "abstract_socket", "posix_shm")


def colluding_pair(base: Path, channel: str) -> tuple[Path, Path]:
    """Two students for one grade-all batch, each a folder holding an ex01 built on the answer key:
    `base/writer` publishes, through `channel` (COLLUDING_CHANNELS), every argument its functions are
    called with, and a beacon at import; `base/reader` listens while it is imported and prints what
    it received (`R <value>` lines, latest first, after a `BEACON seen|not seen on <channel>` line).
    Returns (writer, reader).

    Deserved: full marks for the writer; no hidden ex01 argument in anything the reader sees before
    the deadline (grade-all's public phases all end before any hidden phase starts). The reader spends
    up to 9 s listening at each import, its hidden phase included, and may lose hidden cases to its
    time limit.
    """
    if channel not in COLLUDING_CHANNELS:
        raise ValueError(f"unknown channel {channel!r}: one of {COLLUDING_CHANNELS}")
    key = answer_key("ex01").decode("utf-8")
    channels = (COLLUDING_PAIRS / "channels.py").read_text(encoding="utf-8")
    made = []
    for role in ("writer", "reader"):
        folder = base / role
        folder.mkdir(parents=True)
        part = (COLLUDING_PAIRS / f"{role}.py").read_text(encoding="utf-8")
        source = f"{key}\n\nCHANNEL = {channel!r}\n\n{channels}\n\n{part}"
        (folder / EX01_FILE).write_text(source, encoding="utf-8")
        made.append(folder)
    return made[0], made[1]


def disguised_copy(text: str) -> str:
    """`text` (an exercise file) as a copier disguises it: every local variable and private helper renamed,
    the top-level functions in reverse order, docstrings and comments dropped, the layout and quotes
    rewritten (`ast.unparse`). The public functions and their parameters keep their names (the grader
    calls them), so the copy grades as the original does."""
    tree = ast.parse(text)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    keep = {f.name for f in functions if not f.name.startswith("_")}
    keep |= {a.arg for f in functions for a in [*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs]}
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    helpers = {f.name for f in functions if f.name.startswith("_")}
    renamed = {name: f"v{i}_{name.strip('_')[::-1][:5]}" for i, name in enumerate(sorted((stored | helpers) - keep))}

    class Rename(ast.NodeTransformer):
        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
            node.name = renamed.get(node.name, node.name)
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                node.body = body[1:] or [ast.Pass()]
            self.generic_visit(node)
            return node

        def visit_Name(self, node: ast.Name) -> ast.Name:
            node.id = renamed.get(node.id, node.id)
            return node

    tree = Rename().visit(tree)
    body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    tree.body = [n for n in body if not isinstance(n, ast.FunctionDef)]
    tree.body += [n for n in body if isinstance(n, ast.FunctionDef)][::-1]
    return ast.unparse(tree) + "\n"
