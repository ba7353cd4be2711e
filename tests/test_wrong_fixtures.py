"""The wrong fixtures of autograder/authoring/wrong_fixtures.py: small declared edits of the answer key.

- Every edit's old text occurs exactly once in its answer-key file, on code lines inside one function
  (never in a docstring), and a fixture edits only a few lines.
- A stale edit (old text missing or no longer unique) fails loudly instead of testing nothing.
- Materialising every fixture gives a file that says `MISTAKE: <sentence>`, carries no solution
  marker, differs from the key in code and fails at least one case that the key passes.
- Every fixture is caught where students look: it fails a hidden unit case of the function its edit is
  in (not only a simulator case that happens to run that function) and a public case of that function.
- The known mistakes stored in autograder/expected/ are declared fixtures, with the declared sentence.
"""

from __future__ import annotations

import ast

import pytest

from autograder.authoring.mutation import killed_by
from autograder.authoring.wrong_fixtures import BY_NAME, FIXTURES, StaleFixture, materialise, source
from autograder.core.cases import expected_values, hidden_cases, public_cases
from autograder.core.manifest import BEGIN, END, EXERCISES, ROOT
from hetero.checks import check_call, judge, run_call
from hetero.impl import load_module_from_path

NAMES = [f.name for f in FIXTURES]
MAX_OLD_LINES = 8  # measured today: 1 to 6 (ex01_finite_only edits the check of its three functions)


def _key(fixture) -> str:
    return (ROOT / "solutions" / fixture.filename).read_text(encoding="utf-8")


def _edited_functions(fixture) -> set[str]:
    """The names of the answer-key functions whose bodies the fixture's edits change."""
    key = _key(fixture)
    spans = [(n.name, n.lineno, n.end_lineno) for n in ast.parse(key).body if isinstance(n, ast.FunctionDef)]
    firsts = [key[: key.index(e.old)].count("\n") + 1 for e in fixture.edits]
    return {name for name, lo, hi in spans for first in firsts if lo < first <= hi}


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def test_names_are_unique_and_every_exercise_has_fixtures():
    assert len(NAMES) == len(set(NAMES)) == len(BY_NAME)
    assert {f.exercise for f in FIXTURES} == {e.id for e in EXERCISES}


@pytest.mark.parametrize("name", NAMES)
def test_edits_fit_the_answer_key_once_on_code_lines_inside_a_function(name):
    fixture = BY_NAME[name]
    key = _key(fixture)
    tree = ast.parse(key)
    docs = _docstring_lines(tree)
    functions = [(n.lineno, n.end_lineno) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for edit in fixture.edits:
        assert key.count(edit.old) == 1, f"{name}: {edit.old!r} occurs {key.count(edit.old)} times in the key"
        first = key[: key.index(edit.old)].count("\n") + 1
        last = first + edit.old.rstrip("\n").count("\n")
        assert not docs & set(range(first, last + 1)), f"{name}: edits a docstring (lines {first}-{last})"
        assert any(lo < first and last <= hi for lo, hi in functions), (
            f"{name}: lines {first}-{last} are not inside one function body"
        )
    old_lines = sum(e.old.count("\n") or 1 for e in fixture.edits)
    assert old_lines <= MAX_OLD_LINES, f"{name}: edits {old_lines} lines; a fixture is one small mistake"


def test_a_stale_edit_fails_loudly(tmp_path):
    fixture = BY_NAME["ex01_gib"]
    (tmp_path / "solutions").mkdir()
    stale = tmp_path / "solutions" / fixture.filename
    edit = fixture.edits[0]
    stale.write_text(_key(fixture).replace(edit.old, edit.old.replace("/", "/ 1.0 /")), encoding="utf-8")
    with pytest.raises(StaleFixture, match="occurs 0 times"):
        materialise(fixture.name, tmp_path / "out", root=tmp_path)
    stale.write_text(_key(fixture) + "\n\ndef again(price_usd, capacity_gb):\n" + edit.old, encoding="utf-8")
    with pytest.raises(StaleFixture, match="occurs 2 times"):
        source(fixture.name, root=tmp_path)
    assert not (tmp_path / "out").exists(), "nothing is written for a stale fixture"


@pytest.mark.parametrize("name", NAMES)
def test_materialised_fixture_is_marked_and_differs_from_the_key_in_code(name, wrong_dir):
    fixture = BY_NAME[name]
    text = (wrong_dir / name / fixture.filename).read_text(encoding="utf-8")
    assert sorted(p.name for p in (wrong_dir / name).iterdir()) == [fixture.filename]
    tree = ast.parse(text)
    assert (ast.get_docstring(tree) or "").startswith(f"MISTAKE: {fixture.mistake}\n")
    assert BEGIN not in text and END not in text, f"{name}: a wrong submission carries no solution markers"
    key_code = [ast.dump(n) for n in ast.parse(_key(fixture)).body[1:]]
    assert [ast.dump(n) for n in tree.body[1:]] != key_code, f"{name}: differs from the key only in text"


@pytest.mark.parametrize("name", NAMES)
def test_materialised_fixture_fails_a_case_the_key_passes(name):
    fixture = BY_NAME[name]
    cases = [("public", c) for c in public_cases(fixture.exercise)]
    cases += [("hidden", c) for c in hidden_cases(fixture.exercise)]
    assert killed_by(source(name), fixture.exercise, cases, expected_values(fixture.exercise)), (
        f"{name} passes every public and hidden case: the edit does not change the key's behaviour"
    )


def test_stored_known_mistakes_are_the_declared_ones():
    for ex in EXERCISES:
        for case_id, entry in expected_values(ex.id).items():
            for name, (description, _) in entry["mistakes"].items():
                assert name in BY_NAME, f"{case_id}: stored mistake {name} is not declared"
                assert description == BY_NAME[name].mistake, f"{case_id}: {name} is stored as {description!r}"


# Fixtures whose mistake no public case of its function can show, each with the reason. Empty today:
# every declared mistake changes an answer a small hand-checkable case can show.
NO_PUBLIC_CASE: dict[str, str] = {}


def _wrong_module(name: str, wrong_dir):
    fixture = BY_NAME[name]
    return load_module_from_path(wrong_dir / name / fixture.filename, f"_a2_caught_{name}")


@pytest.mark.parametrize("name", NAMES)
def test_fixture_fails_a_hidden_unit_case_of_its_own_function(name, wrong_dir):
    """Not only a simulator (harness) case: a hidden case that calls the edited function itself."""
    fixture = BY_NAME[name]
    funcs = _edited_functions(fixture)
    assert funcs, f"{name}: its edits are in no top-level function of the key"
    module, stored = _wrong_module(name, wrong_dir), expected_values(fixture.exercise)
    own = [c for c in hidden_cases(fixture.exercise) if c.harness is None and c.func in funcs]
    assert own, f"{name}: no hidden unit case calls {sorted(funcs)}"
    failed = [
        c.id for c in own if not judge(c, run_call(c, module), None if c.raises else stored[c.id]["expect"]).passed
    ]
    assert failed, (
        f"{name} passes all {len(own)} hidden unit cases of {sorted(funcs)}: only a harness case (if any) "
        f"catches it; add a hidden case of autograder/tests/{fixture.exercise}_hidden.py where the mistake matters"
    )


@pytest.mark.parametrize("name", NAMES)
def test_fixture_fails_a_public_case_of_its_own_function(name, wrong_dir):
    """The public tests (and their summary) must not say `ok` to a declared mistake."""
    fixture = BY_NAME[name]
    funcs = _edited_functions(fixture)
    module = _wrong_module(name, wrong_dir)
    own = [c for c in public_cases(fixture.exercise) if c.func in funcs]
    failed = [c.id for c in own if not check_call(c, module).passed]
    if name in NO_PUBLIC_CASE:
        assert not failed, f"{name} now fails public case {failed[0]}: drop it from NO_PUBLIC_CASE"
        return
    assert failed, (
        f"{name} passes all {len(own)} public cases of {sorted(funcs)}: a student with this mistake sees `ok`; "
        f"add a hand-checkable case to solutions/tests/public_{fixture.exercise}.py whose hint names the mistake"
    )


def test_allow_list_names_declared_fixtures():
    assert set(NO_PUBLIC_CASE) <= set(BY_NAME), sorted(set(NO_PUBLIC_CASE) - set(BY_NAME))


def test_public_cases_see_every_change_a_hidden_case_sees():
    """Issue 22 item 2's sweep, widened by issue 31: every mutant of the answer key that a hidden case kills (an
    arithmetic operator, a comparison at a boundary, a dropped check, a constant) is killed by the public cases
    alone, so that mistake fails `make test` where students look, not only in grading. The exceptions are the
    ones `autograder/authoring/mutation_notes.json` explains (changes at the cases' own float tolerance)."""
    import json

    from autograder.authoring import mutation

    notes = json.loads(mutation.NOTES.read_text(encoding="utf-8"))
    report = mutation.run([e.id for e in EXERCISES])
    blind = [h["key"] for r in report.values() for h in r["hidden_only"] if h["key"] not in notes]
    assert not blind, f"changes only hidden cases see (add a public case that changes its answer): {blind}"
