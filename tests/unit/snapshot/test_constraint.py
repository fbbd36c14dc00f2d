"""Slurm's --constraint grammar: a case table of Slurm's own examples and of what slurmctld 22.05 did on the
local cluster (tests/system/test_constraint_live.py replays some), and properties against a reference evaluator."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_plugin.snapshot.constraint import ConstraintError, constraint_matches, parse_constraint

X86 = {"x86_64", "eu-west"}
ARM = {"aarch64", "eu-west"}
NPU = {"aarch64", "huawei", "ascend910b", "apac"}

# (constraint, node features, matches)
CASES = [
    ("", X86, True),
    ("x86_64", X86, True),
    ("aarch64", X86, False),
    ("intel&gpu", {"intel", "gpu"}, True),
    ("intel&gpu", {"intel"}, False),
    ("intel|amd", {"amd"}, True),
    ("x86_64,eu-west", X86, True),                      # ',' is AND
    ("x86_64,apac", X86, False),
    ("(aarch64|x86_64)&eu-west", {"aarch64"}, False),   # issue 12: the old reader said True
    ("(aarch64|x86_64)&eu-west", ARM, True),
    ("(aarch64|x86_64)&eu-west", NPU, False),
    ("aarch64*2", {"aarch64"}, True),                   # issue 12: the old reader said False
    ("graphics*4&intel", {"graphics", "intel"}, True),
    ("x86_64|aarch64&apac", X86, False),                # left to right: (x86_64|aarch64)&apac
    ("aarch64&apac|x86_64", X86, True),                 # (aarch64&apac)|x86_64
    ("x86_64|(aarch64&apac)", X86, True),
    ("[rack1|rack2|rack3|rack4]", {"rack3"}, True),
    ("[rack1|rack2]", {"rack5"}, False),
    ("[rack1*2&rack2*4]", {"rack2"}, True),             # each node serves one of the counted terms
    ("[(rack1|rack2)*1&(rack3)*2]", {"rack2"}, True),
    ("[(knl&snc4&flat)*4&haswell*1]", {"knl", "snc4"}, False),
    ("[(knl&snc4&flat)*4&haswell*1]", {"knl", "snc4", "flat"}, True),
    ("eu-west&[aarch64|x86_64]", ARM, True),
    ("[aarch64|x86_64]&apac", ARM, False),
    ("(aarch64|x86_64)*2", ARM, True),
    ("aarch64&", ARM, True),                            # slurmctld ignores a trailing operator
    ('"aarch64"&eu-west', ARM, True),                   # quoted name
    ("((aarch64|x86_64)&eu-west)", ARM, True),          # nested parentheses (22.05 refuses; later accept)
]


@pytest.mark.parametrize("expr,features,want", CASES, ids=[f"{c[0]}-{sorted(c[1])}" for c in CASES])
def test_slurm_examples(expr, features, want):
    assert constraint_matches(expr, features) is want


# (constraint, words of the error) - each refused by slurmctld 22.05 as "Invalid feature specification"
BAD = [
    ("[aarch64&eu-west]", "every term needs a count"),
    ("aarch64**2", "count after '*'"),
    ("aarch64*0", "greater than 0"),
    ("(aarch64", "expected ')'"),
    ("&aarch64", "expected a feature name"),
    ("aarch64||x86_64", "expected a feature name"),
    ("[aarch64|x86_64]*2", "takes no count"),
    ("[a|b][c|d]", "unexpected '['"),
    ("[[aarch64]]", "only one [...]"),
    ("[a*1|b*1]", "take no count"),
    ("()", "expected a feature name"),
    ("aarch64(eu-west)", "unexpected '('"),
    ("aarch64 x86_64", "unexpected 'x86_64'"),
    ("a" * 5000, "longer than"),
]


@pytest.mark.parametrize("expr,words", BAD, ids=[b[0][:20] for b in BAD])
def test_invalid_constraints_are_refused_with_position(expr, words):
    with pytest.raises(ConstraintError) as err:
        parse_constraint(expr)
    assert words in str(err.value) and "at character" in str(err.value)
    assert constraint_matches(expr, {"aarch64", "x86_64", "eu-west", "a", "b"}) is False


def test_helpers_for_arch_and_type_choices():
    arches = ["aarch64", "x86_64", "riscv64"]
    assert parse_constraint("(aarch64|x86_64)&eu-west").allowed(arches) == {"aarch64", "x86_64"}
    assert parse_constraint("bigmem").allowed(arches) == set(arches)
    assert parse_constraint("aarch64&x86_64").allowed(arches) == set()
    assert parse_constraint("[a100|h100]").alternatives() == ("a100", "h100")
    assert parse_constraint("(a100|h100)").alternatives() == ("a100", "h100")
    assert parse_constraint("a100").alternatives() == ("a100",)
    assert parse_constraint("a100|h100&eu").alternatives() is None
    assert parse_constraint("a100*2|h100").alternatives() is None
    assert parse_constraint("(a|b)&c").names == {"a", "b", "c"}


# --- properties against a reference evaluator -------------------------------------------------------------
# A constraint is generated as a tree; ``render`` writes it the way Slurm reads it (left to right, so a
# compound right operand needs parentheses), and ``reference`` evaluates the tree directly.

NAMES = ["a", "b", "c", "d", "x86_64", "eu-west"]
name = st.sampled_from(NAMES)
count = st.one_of(st.none(), st.integers(1, 9))
leaf = st.tuples(st.just("name"), name, count)
tree = st.recursive(
    leaf,
    lambda kids: st.one_of(
        st.tuples(st.sampled_from(["&", "|", ","]), kids, kids),
        st.tuples(st.just("group"), kids, count)),
    max_leaves=8)


def render(t, parens_everywhere: bool = False) -> str:
    kind = t[0]
    if kind == "name":
        return t[1] + (f"*{t[2]}" if t[2] else "")
    if kind == "group":
        return f"({render(t[1], parens_everywhere)})" + (f"*{t[2]}" if t[2] else "")
    left, right = render(t[1], parens_everywhere), render(t[2], parens_everywhere)
    if t[2][0] in "&|," or parens_everywhere:
        right = f"({right})"
    if parens_everywhere and t[1][0] in "&|,":
        left = f"({left})"
    return f"{left}{kind}{right}"


def reference(t, have: set[str]) -> bool:
    kind = t[0]
    if kind == "name":
        return t[1] in have
    if kind == "group":
        return reference(t[1], have)
    if kind == "|":
        return reference(t[1], have) or reference(t[2], have)
    return reference(t[1], have) and reference(t[2], have)


@settings(max_examples=300, deadline=None)
@given(tree, st.sets(st.sampled_from(NAMES)))
def test_parser_agrees_with_the_reference_evaluator(t, have):
    assert parse_constraint(render(t)).matches(have) is reference(t, have)
    assert parse_constraint(render(t, parens_everywhere=True)).matches(have) is reference(t, have)


@settings(max_examples=200, deadline=None)
@given(st.lists(name, min_size=1, max_size=7), st.lists(st.sampled_from("&|"), min_size=6, max_size=6),
       st.sets(st.sampled_from(NAMES)))
def test_flat_expressions_read_left_to_right(names, ops, have):
    expr = names[0] + "".join(op + n for op, n in zip(ops, names[1:]))
    want = names[0] in have
    for op, n in zip(ops, names[1:]):
        want = (want and n in have) if op == "&" else (want or n in have)
    assert parse_constraint(expr).matches(have) is want


@settings(max_examples=200, deadline=None)
@given(st.lists(name, min_size=1, max_size=5), st.sets(st.sampled_from(NAMES)), st.booleans())
def test_bracket_is_an_or_for_one_node(options, have, counted):
    expr = "[" + ("&".join(f"{o}*2" for o in options) if counted else "|".join(options)) + "]"
    assert parse_constraint(expr).matches(have) is any(o in have for o in options)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab&|,()[]*12 \"", max_size=20))
def test_any_text_parses_or_raises_constraint_error(text):
    try:
        parsed = parse_constraint(text)
    except ConstraintError:
        return
    parsed.matches({"a", "b"})  # a parsed constraint always evaluates


def test_long_and_deep_constraints_cost_no_recursion():
    chain = "&".join(f"f{i}" for i in range(800))  # 4,000 characters of AND
    assert parse_constraint(chain).matches({f"f{i}" for i in range(800)})
    assert not parse_constraint(chain).matches({f"f{i}" for i in range(799)})
    assert constraint_matches("|".join(f"f{i}" for i in range(800)), {"f799"})
    assert constraint_matches("&".join(["a"] * 2000), {"a"})  # 3,999 characters: 2,000 terms
    with pytest.raises(ConstraintError, match="more than 32 nested parentheses"):
        parse_constraint("(" * 40 + "a" + ")" * 40)
    assert parse_constraint("(" * 32 + "a" + ")" * 32).matches({"a"})
