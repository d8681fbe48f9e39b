"""Each of the nine replacers on the case it exists for, then the chain's uniqueness rules."""

import pytest

from hangar.engine.tools import replacers as r


def only(replacer, content, find):
    return list(replacer(content, find))


def test_simple_replacer_matches_the_exact_text():
    assert r.replace_with("a = 1\nb = 2\n", "b = 2", "b = 3") == ("a = 1\nb = 3\n", "SimpleReplacer")


def test_line_trimmed_replacer_ignores_indentation_and_trailing_spaces_per_line():
    content = "def f():\n    x = 1   \n    return x\n"
    new, name = r.replace_with(content, "x = 1\nreturn x", "y = 2")
    assert name == "LineTrimmedReplacer"
    assert new == "def f():\ny = 2\n"


def test_block_anchor_replacer_accepts_a_different_middle_between_matching_anchors():
    content = "def f():\n    total = compute(a, b)\n    return total\n"
    find = "def f():\n    total = compute(a)\n    return total"
    new, name = r.replace_with(content, find, "def f():\n    return 0")
    assert name == "BlockAnchorReplacer"
    assert new == "def f():\n    return 0\n"


def test_block_anchor_replacer_picks_the_most_similar_of_several_blocks():
    content = "if a:\n    alpha_beta()\nend\nif a:\n    zzz()\nend\n"
    assert only(r.block_anchor, content, "if a:\n    alpha_betx()\nend") == ["if a:\n    alpha_beta()\nend"]


def test_whitespace_normalized_replacer_collapses_runs_of_spaces_inside_a_line():
    content = "x  =   compute( a,  b )\n"
    new, name = r.replace_with(content, "x = compute( a, b )", "x = 0")
    assert name == "WhitespaceNormalizedReplacer"
    assert new == "x = 0\n"


def test_indentation_flexible_replacer_matches_a_block_at_another_indent_level():
    content = "class A:\n        if ok:\n            run()\n"
    assert only(r.indentation_flexible, content, "if ok:\n    run()") == ["        if ok:\n            run()"]
    # Relative indentation must agree: a flattened block is not the same block.
    assert only(r.indentation_flexible, content, "if ok:\nrun()") == []


def test_escape_normalized_replacer_unescapes_what_the_model_escaped():
    content = 'say("hi")\n'
    new, name = r.replace_with(content, 'say(\\"hi\\")', 'say("bye")')
    assert name == "EscapeNormalizedReplacer"
    assert new == 'say("bye")\n'


def test_trimmed_boundary_replacer_drops_blank_lines_around_old_string():
    content = "alpha beta\ngamma delta\n"
    new, name = r.replace_with(content, "\n\nbeta\ngamma  \n", "BETA\nGAMMA")
    assert name == "TrimmedBoundaryReplacer"
    assert new == "alpha BETA\nGAMMA delta\n"


def test_context_aware_replacer_finds_the_unique_block_when_the_best_anchor_block_is_duplicated():
    twin = "start\n  a = 1\n  b = 2\n  c = 99\nend\n"
    other = "start\n  a = 1\n  b = 2\n  zzzzzzzzzzzz\nend\n"
    content = twin + twin + other
    new, name = r.replace_with(content, "start\n  a = 1\n  b = 2\n  c = 3\nend", "replaced")
    assert name == "ContextAwareReplacer"
    assert new == twin + twin + "replaced\n"


def test_context_aware_replacer_needs_half_of_the_middle_lines_to_match():
    content = "start\n  x\n  y\nend\n"
    assert only(r.context_aware, content, "start\n  x\n  q\nend") == ["start\n  x\n  y\nend"]
    assert only(r.context_aware, content, "start\n  p\n  q\nend") == []


def test_multi_occurrence_replacer_yields_every_exact_occurrence():
    assert only(r.multi_occurrence, "ab ab ab", "ab") == ["ab", "ab", "ab"]


def test_the_chain_tries_the_replacers_in_opencodes_order():
    assert [name for name, _ in r.REPLACERS] == [
        "SimpleReplacer",
        "LineTrimmedReplacer",
        "BlockAnchorReplacer",
        "WhitespaceNormalizedReplacer",
        "IndentationFlexibleReplacer",
        "EscapeNormalizedReplacer",
        "TrimmedBoundaryReplacer",
        "ContextAwareReplacer",
        "MultiOccurrenceReplacer",
    ]


def test_an_ambiguous_match_is_refused_with_opencodes_words():
    with pytest.raises(r.ReplaceError) as exc:
        r.replace("x = 1\nx = 1\n", "x = 1", "x = 2")
    assert str(exc.value) == (
        "Found multiple matches for oldString. Provide more surrounding context to make the match unique."
    )


def test_replace_all_changes_every_occurrence():
    assert r.replace("x = 1\nx = 1\n", "x = 1", "x = 2", replace_all=True) == "x = 2\nx = 2\n"


def test_a_missing_old_string_is_reported():
    with pytest.raises(r.ReplaceError) as exc:
        r.replace("a\n", "zzz", "b")
    assert str(exc.value) == (
        "Could not find oldString in the file. It must match exactly, including whitespace, indentation, "
        "and line endings."
    )


def test_identical_strings_are_refused():
    with pytest.raises(
        r.ReplaceError, match=r"^No changes to apply: oldString and newString are identical\.$"
    ):
        r.replace("a\n", "a", "a")
