"""Similar code across a class, per exercise: `python -m autograder similarity SUBMISSIONS --out DIR`.

`python -m autograder similarity SUBMISSIONS --out DIR [--archive EARLIER ...] [--threshold 0.5]
[--exercises exNN ...] [--max-pages 1000]` reads every submission of SUBMISSIONS (the folder, or Gradescope export zip, that
grade-all reads, with the same student keys: `autograder.batch.submissions.discover`) and each
exercise's file in it (found by `autograder.runtime.intake.locate`, as the grader finds it: near-miss
names, zips, notebooks through their exercise cells) as text. It never imports or runs a student's code:
files are read, decoded (bad bytes replaced) and tokenised by Pygments' Python lexer, nothing else.

The measure is copydetect's (copydetect 0.5.0, MIT licence; the winnowing algorithm of MOSS: Schleimer,
Wilkerson and Aiken, SIGMOD 2003). Per exercise, each file is tokenised with names, function names and
string literals normalised (renaming variables changes nothing), comments and layout dropped; every
k-gram of `K` characters of that token text is hashed, and the hashes of the released starter stub
(`assignments/exNN_*.py`: the docstrings, signatures and `raise NotImplementedError` every student
starts from) are removed, so an unfilled stub shares nothing with anyone. The share of a file that a
pair has in common is copydetect's: the tokens covered by the fingerprints both files hold, over the
tokens covered by the file's own fingerprints; a pair is listed when either share reaches `--threshold`
(default 0.5). Functions in another order still share their fingerprints (a fingerprint is a position-
free hash), so reordering changes little. The shares of every pair are computed here with numpy from
copydetect's fingerprints (`shares`: the same numbers as its `compare_files`, five times faster, which
tests/test_similarity.py checks); `compare_files` maps the shared regions back to the files' text for
the flagged pairs only.

Why copydetect: maintained, MIT-licensed (compare50 is GPL-3, MOSS a remote service that would receive the
students' code), offline, numpy-fast, and it returns the copied regions of both files, which the side-by-
side pages show. Its own HTML report and its CLI are not used: the pages here are written by this module
(every text escaped with `html.escape`, no script), from its fingerprints and `compare_files`.

Earlier terms (`--archive DIR`, repeatable: a folder of submissions per term, named by the folder): each
current submission is also compared with each archived one (archives are not compared with each other).

Writes DIR/similarity.json (the pairs and the parameters; `python -m autograder report` shows them),
DIR/index.html (the pairs, most similar first) and DIR/pairs/<exercise>-<n>.html (the two files side
by side, the shared regions marked) for the `--max-pages` most similar pairs (1000; a class where more
pairs are flagged shares code too widely for pages to help: they are listed without one). Measured:
`python benchmarks/bench_similarity.py`.
"""

from __future__ import annotations

import argparse
import html
import io
import json
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.batch.submissions import discover
from autograder.core.manifest import BY_ID, EXERCISES, ROOT, Exercise
from autograder.core.safetext import clean_text, terminal_text
from autograder.runtime import intake
from autograder.runtime.statedir import created_mode

TOOL = "copydetect 0.5.0"
K = 25  # copydetect's noise threshold: k-grams of 25 characters of token text
WINDOW = 1  # copydetect's default guarantee threshold = noise threshold: every k-gram is a fingerprint
THRESHOLD = 0.5
MAX_PAGES = 1000
SIMILARITY_FILE = "similarity.json"


class SimilarityError(ValueError):
    """Bad input (missing folder, bad threshold, unknown exercise): the message says which."""


@dataclass(frozen=True)
class Source:
    """One file of one submission, as text (never imported)."""

    student: str
    term: str  # "" for the current class, else the archive's name
    exercise: str
    shown: str  # where the file was in the submission
    text: str


def read_sources(folder: Path, exercises: Sequence[Exercise], term: str = "") -> tuple[list[Source], list[str]]:
    """Every exercise file of every submission under `folder`, as text, and the entries refused (why)."""
    with tempfile.TemporaryDirectory(prefix="a2-similarity-") as scratch:
        subs, refused = discover(folder, Path(scratch) / "export")
        sources: list[Source] = []
        for n, sub in enumerate(subs):
            staging = Path(scratch) / f"s{n}"
            found, _ = intake.locate(sub.path, exercises, staging, follow_link=False)
            for ex in exercises:
                item = found.get(ex.id)
                if item is None or item.path is None:
                    continue
                text = item.path.read_bytes().decode("utf-8", errors="replace")
                sources.append(Source(sub.student, term, ex.id, clean_text(item.shown), clean_text(text)))
    return sources, [f"{r.entry}: {r.reason}" for r in refused]


def _fingerprint(source_text: str, ex: Exercise, boilerplate: Any) -> Any:
    from copydetect import CodeFingerprint

    return CodeFingerprint(ex.filename, K, WINDOW, boilerplate, fp=io.StringIO(source_text))


def stub_hashes(ex: Exercise, root: Path = ROOT) -> Any:
    """Every k-gram hash of the released stub of `ex` (the starter code everyone is given)."""
    import numpy as np

    stub = root / "assignments" / ex.filename
    if not stub.is_file():
        raise SimilarityError(f"{stub} is missing: run `make release` (the stub is the starter code excluded)")
    return np.unique(np.array(sorted(_fingerprint(stub.read_text(encoding="utf-8"), ex, None).hashes)))


@dataclass(frozen=True)
class Prepared:
    """A file's fingerprints as arrays: the hash at each fingerprinted position, and the sorted distinct hashes."""

    print: Any  # copydetect.CodeFingerprint
    hashes: Any  # numpy int64, one per position
    positions: Any  # numpy int64, the positions (in the token text)
    distinct: Any  # numpy int64, sorted

    @classmethod
    def of(cls, fingerprint: Any) -> Prepared:
        import numpy as np

        items = [(h, p) for h, ps in fingerprint.hash_idx.items() for p in ps]
        hashes = np.array([h for h, _ in items], dtype=np.int64)
        positions = np.array([p for _, p in items], dtype=np.int64)
        return cls(fingerprint, hashes, positions, np.unique(hashes))


def share(a: Prepared, b: Prepared) -> float:
    """copydetect's similarity of `a` to `b`: the tokens of `a` covered by its fingerprints that `b` holds
    too, over the tokens of `a` its fingerprints cover (`compare_files`' first share)."""
    import numpy as np
    from copydetect.utils import get_copied_slices

    if not len(a.hashes) or not len(b.distinct) or not a.print.token_coverage:
        return 0.0
    at = np.minimum(np.searchsorted(b.distinct, a.hashes), len(b.distinct) - 1)
    shared = a.positions[b.distinct[at] == a.hashes]
    if not len(shared):
        return 0.0
    slices = get_copied_slices(shared, a.print.k)
    return float(np.sum(slices[1] - slices[0])) / float(a.print.token_coverage)


@dataclass(frozen=True)
class Pair:
    exercise: str
    a: Source
    b: Source
    a_share: float
    b_share: float
    shared_tokens: int
    a_slices: list[tuple[int, int]]
    b_slices: list[tuple[int, int]]


def _slices(array: Any, length: int) -> list[tuple[int, int]]:
    """copydetect's 2xN slice array as sorted, merged (start, end) ranges inside [0, length)."""
    if len(array) == 0 or len(array[0]) == 0:
        return []
    ranges = sorted((max(0, int(s)), min(length, int(e))) for s, e in zip(array[0], array[1], strict=True))
    merged: list[tuple[int, int]] = []
    for start, end in ranges:
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def compare(sources: Sequence[Source], threshold: float = THRESHOLD, root: Path = ROOT) -> tuple[list[Pair], int]:
    """The pairs of `sources` (same exercise; current x current and current x archive) whose share of
    either file reaches `threshold`, most similar first, and the number of pairs compared."""
    from copydetect import compare_files

    pairs: list[Pair] = []
    compared = 0
    for ex in EXERCISES:
        mine = [s for s in sources if s.exercise == ex.id]
        if len(mine) < 2:
            continue
        boilerplate = stub_hashes(ex, root)
        prints = [Prepared.of(_fingerprint(s.text, ex, boilerplate)) for s in mine]
        for i, a in enumerate(mine):
            if a.term:
                continue  # archives are compared with the current class only
            for j in range(len(mine)):
                b = mine[j]
                if (j <= i and not b.term) or j == i or not prints[i].print.hashes or not prints[j].print.hashes:
                    continue
                compared += 1
                if prints[i].print.hashes.isdisjoint(prints[j].print.hashes):
                    continue
                if max(share(prints[i], prints[j]), share(prints[j], prints[i])) >= threshold:
                    overlap, (share_a, share_b), (slices_a, slices_b) = compare_files(prints[i].print, prints[j].print)
                    pairs.append(
                        Pair(
                            ex.id,
                            a,
                            b,
                            float(share_a),
                            float(share_b),
                            int(overlap),
                            _slices(slices_a, len(a.text)),
                            _slices(slices_b, len(b.text)),
                        )
                    )
    pairs.sort(key=lambda p: (-max(p.a_share, p.b_share), p.exercise, p.a.student, p.b.student))
    return pairs, compared


# ---------------------------------------------------------------------------------------------
# Pages

CSS = """body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; } th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; }
th { background: #eef2f7; } .n { text-align: right; font-variant-numeric: tabular-nums; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
pre { background: #fafafa; border: 1px solid #ddd; padding: .6em; overflow-x: auto; font-size: .85em; }
mark { background: #ffe08a; } .note { color: #555; }"""
HEAD = (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
)


def esc(text: Any) -> str:
    return html.escape(clean_text(text), quote=True)


def marked(text: str, slices: list[tuple[int, int]]) -> str:
    """`text` HTML-escaped, each slice wrapped in <mark>."""
    parts, at = [], 0
    for start, end in slices:
        parts += [esc(text[at:start]), "<mark>", esc(text[start:end]), "</mark>"]
        at = end
    parts.append(esc(text[at:]))
    return "".join(parts)


def who(source: Source) -> str:
    return source.student + (f" ({source.term})" if source.term else "")


def pair_page(pair: Pair) -> str:
    sides = "".join(
        f'<div><h2>{esc(who(s))}</h2><p class="note">{esc(s.shown)}: {100 * share:.0f}% of this file\'s code is '
        f"shared</p><pre>{marked(s.text, slices)}</pre></div>"
        for s, share, slices in ((pair.a, pair.a_share, pair.a_slices), (pair.b, pair.b_share, pair.b_slices))
    )
    return (
        f"{HEAD}<title>{esc(pair.exercise)}: {esc(who(pair.a))} and {esc(who(pair.b))}</title><style>{CSS}</style>"
        f'</head><body><h1>{esc(pair.exercise)}: {esc(who(pair.a))} and {esc(who(pair.b))}</h1><p class="note">'
        f"Marked: the code both files share ({TOOL}, {K}-character fingerprints of the token text, names and "
        "literals normalised, the starter stub excluded). A hint, not a verdict: short exercises converge on "
        f'similar code.</p><div class="sides">{sides}</div></body></html>\n'
    )


def index_page(summary: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{esc(p['exercise'])}</td><td>{esc(p['a'])}</td><td>{esc(p['b'])}"
        f'{" (" + esc(p["b_term"]) + ")" if p["b_term"] else ""}</td><td class="n">{100 * p["a_share"]:.0f}%</td>'
        f'<td class="n">{100 * p["b_share"]:.0f}%</td><td>'
        + (f'<a href="{esc(p["page"])}">side by side</a>' if p["page"] else "(no page: past --max-pages)")
        + "</td></tr>"
        for p in summary["pairs"]
    )
    return (
        f"{HEAD}<title>Similar submissions</title><style>{CSS}</style></head><body><h1>Similar submissions</h1>"
        f'<p class="note">{summary["students"]} submissions, exercises {esc(", ".join(summary["exercises"]))}; '
        f"{summary['compared']} pairs compared, {len(summary['pairs'])} at or above {100 * summary['threshold']:.0f}% "
        "of either file. A hint, not a verdict.</p><table><tr><th>exercise</th><th>student</th><th>student or "
        "earlier term</th><th>share of the first</th><th>share of the second</th><th></th></tr>"
        f"{rows}</table></body></html>\n"
    )


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".sim-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, created_mode())
    os.replace(tmp, path)


def run(
    submissions: Path,
    out: Path,
    archives: Sequence[Path] = (),
    threshold: float = THRESHOLD,
    exercises: Sequence[str] | None = None,
    root: Path = ROOT,
    max_pages: int = MAX_PAGES,
) -> dict[str, Any]:
    """Compare, write DIR's files (module docstring) and return the summary written to similarity.json."""
    if not 0 < threshold <= 1:
        raise SimilarityError(f"--threshold {threshold} must lie in (0, 1]: a share of a file's code")
    if max_pages < 0:
        raise SimilarityError(f"--max-pages {max_pages} must be >= 0")
    unknown = sorted(set(exercises or ()) - set(BY_ID))
    if unknown:
        raise SimilarityError(f"--exercises: unknown {', '.join(unknown)} (the manifest has {', '.join(BY_ID)})")
    chosen = [e for e in EXERCISES if exercises is None or e.id in exercises]
    for folder in [submissions, *archives]:
        if not folder.is_dir() and not zipfile.is_zipfile(folder):
            raise SimilarityError(f"{folder} is not a folder of submissions (nor a Gradescope export zip)")
    start, cpu = time.perf_counter(), time.process_time()
    sources, refused = read_sources(submissions, chosen)
    for archive in archives:
        earlier, more = read_sources(archive, chosen, clean_text(archive.name) or "archive")
        sources += earlier
        refused += more
    read_s, read_cpu = time.perf_counter() - start, time.process_time() - cpu
    pairs, compared = compare(sources, threshold, root)
    summary: dict[str, Any] = {
        "tool": TOOL,
        "k": K,
        "window": WINDOW,
        "threshold": threshold,
        "exercises": [e.id for e in chosen],
        "students": len({s.student for s in sources if not s.term}),
        "archive": {
            t: len({s.student for s in sources if s.term == t}) for t in sorted({s.term for s in sources} - {""})
        },
        "compared": compared,
        "pages": min(len(pairs), max_pages),
        "refused": refused,
        "seconds": {"read": round(read_s, 3), "compare": round(time.perf_counter() - start - read_s, 3)},
        "cpu_seconds": {"read": round(read_cpu, 3), "compare": round(time.process_time() - cpu - read_cpu, 3)},
        "pairs": [],
    }
    for n, pair in enumerate(pairs, start=1):
        page = f"pairs/{pair.exercise}-{n:04d}.html" if n <= max_pages else ""
        if page:
            _write(out / page, pair_page(pair))
        summary["pairs"].append(
            {
                "exercise": pair.exercise,
                "a": pair.a.student,
                "b": pair.b.student,
                "b_term": pair.b.term,
                "a_share": round(pair.a_share, 4),
                "b_share": round(pair.b_share, 4),
                "shared_tokens": pair.shared_tokens,
                "page": page,
            }
        )
    _write(out / "index.html", index_page(summary))
    _write(out / SIMILARITY_FILE, json.dumps(summary, indent=1) + "\n")
    return summary


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder similarity", description=__doc__.splitlines()[0])
    parser.add_argument("submissions", type=Path, help="the folder (or Gradescope export zip) grade-all reads")
    parser.add_argument("--out", type=Path, required=True, help="where similarity.json and the pages go")
    parser.add_argument("--archive", type=Path, action="append", default=[], help="earlier terms' submissions")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="share of either file (0.5)")
    parser.add_argument("--exercises", nargs="+", help="only these exercises (default: all)")
    parser.add_argument("--max-pages", type=int, default=MAX_PAGES, help="side-by-side pages, most similar first")
    args = parser.parse_args(list(argv))
    try:
        summary = run(
            args.submissions, args.out, args.archive, args.threshold, args.exercises, max_pages=args.max_pages
        )
    except (SimilarityError, FileNotFoundError, ValueError) as exc:
        print(f"similarity: {terminal_text(exc)}", file=sys.stderr)
        return 2
    for line in summary["refused"]:
        print(f"similarity: refused {terminal_text(line)}", file=sys.stderr)
    print(
        f"compared {summary['compared']} pairs of {summary['students']} submissions in "
        f"{summary['seconds']['read'] + summary['seconds']['compare']:.1f} s; {len(summary['pairs'])} at or above "
        f"{100 * summary['threshold']:.0f}%: {args.out / 'index.html'}"
    )
    return 0
