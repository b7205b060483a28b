"""Every background-knowledge predicate offered to Aleph, checked on hand-labelled cases.

The mode declarations of the ILP export (``nesybench.kandy.ilp.bias``) offer the learner the
predicates of ``kb/kandy/parts/``. Each of them gets at least one case that must succeed (or
give exactly the listed answers) and one that must fail, worked out by hand from the paper's
definitions (KANDY supplementary §4.5); a predicate offered without both fails the test. The
cases run in SWI-Prolog, in the module the evaluator builds from
``kb/kandy/ilp/<encoding>_large.pl`` (which includes every part).
"""
from __future__ import annotations

import pytest

from nesybench.kandy.ilp import bias
from nesybench.logic import prolog

#: offered predicates that are SWI-Prolog built-ins or the pointer encoding's data
NOT_OURS = {"atom/1", "delete/3", "length/2", "member/2", "nth0/3", "reverse/2",
            "defined_as/3", "sample_is/2"}

T, S, C = "triangle_red_small", "square_red_large", "circle_blue_large"
HOUSE = "stack([triangle_red_small, square_blue_small])"

#: predicate -> cases; a case is (goal, True/False) or (goal, template, answers): ``answers``
#: is the ``~q`` text of findall(template, goal)
NATURAL: dict[str, list[tuple]] = {
    "extract_shape/2": [(f"extract_shape({T}, X)", "X", "[triangle]"),
                        ("extract_shape(hexagon_red_small, _)", False),
                        (f"extract_shape(stack([{T}]), _)", False)],
    "extract_color/2": [(f"extract_color({C}, X)", "X", "[blue]"),
                        ("extract_color(circle_pink_large, _)", False)],
    "extract_size/2": [(f"extract_size({S}, X)", "X", "[large]"),
                       ("extract_size(square_red_huge, _)", False)],
    "exists_shape/2": [(f"exists_shape(circle, [{T}, {C}])", True),
                       (f"exists_shape(square, [{T}, {C}])", False)],
    "exists_color/2": [(f"exists_color(blue, [{T}, {C}])", True),
                       (f"exists_color(green, [{T}])", False)],
    "exists_size/2": [(f"exists_size(large, [{T}, {C}])", True),
                      (f"exists_size(large, [{T}])", False)],
    "same_shape/2": [("same_shape(X, [circle_red_small, circle_blue_large])", "X", "[circle]"),
                     ("same_shape(_, [circle_red_small, square_red_small])", False),
                     ("same_shape(_, [])", False)],
    "same_color/2": [("same_color(X, [circle_red_small, square_red_large])", "X", "[red]"),
                     ("same_color(_, [circle_red_small, circle_blue_small])", False)],
    "same_size/2": [("same_size(X, [circle_red_small, square_blue_small])", "X", "[small]"),
                    ("same_size(_, [circle_red_small, circle_red_large])", False)],
    "contains/2": [(f"contains(stack([{T}, {S}]), X)", "X", f"[{T},{S}]"),
                   (f"contains({T}, _)", False)],
    "recursive_contains/2": [(f"recursive_contains(stack([{T}, in([{C}])]), X)", "X",
                              f"[{T},{C}]"),
                             (f"recursive_contains({T}, _)", False)],
    "extract_operator/2": [(f"extract_operator(side_by_side([{T}]), X)", "X", "[side_by_side]"),
                           (f"extract_operator({T}, _)", False),
                           ("extract_operator(f(a, b), _)", False)],
    "extract_children/2": [("extract_children(grid([x, y]), X)", "X", "[[x,y]]"),
                           ("extract_children(x, _)", False)],
    "extract_op_and_chld/3": [("extract_op_and_chld(in([x]), O, L)", "O-L", "[in-[x]]"),
                              ("extract_op_and_chld(x, _, _)", False)],
    "recursive_contains2/3": [(f"recursive_contains2(stack([{T}, in([{C}])]), X, I)", "X-I",
                               f"[{T}-0,in([{C}])-0,{C}-1]"),
                              (f"recursive_contains2({T}, _, _)", False)],
    "contains_composition/2": [(f"contains_composition(stack([{T}, in([{C}])]), X)", "X",
                                "[stack,in]"),
                               (f"contains_composition(stack([{T}]), grid)", False)],
    "contains_composition_depth/3": [
        (f"contains_composition_depth(stack([{T}, in([{C}])]), O, I)", "O-I",
         "[stack-0,in-1]"),
        (f"contains_composition_depth(stack([{T}]), stack, 1)", False)],
    "same_attribute/1": [("same_attribute([circle_red_small, square_blue_small])", True),
                         ("same_attribute([circle_red_small, square_blue_large])", False)],
    "same_non_size/1": [("same_non_size([circle_red_small, square_red_large])", True),
                        ("same_non_size([circle_red_small, square_blue_small])", False)],
    "all_same/2": [("all_same(X, [a, a, a])", "X", "[a]"), ("all_same(_, [a, b])", False)],
    "expand2/3": [("expand2([a, b], X, Y)", "X-Y", "[a-b]"), ("expand2([a, b, c], _, _)", False)],
    "expand4/5": [("expand4([a, b, c, d], A, B, C, D)", "[A,B,C,D]", "[[a,b,c,d]]"),
                  ("expand4([a, b, c], _, _, _, _)", False)],
    "expand8/9": [("expand8([1,2,3,4,5,6,7,8], A, _, _, _, _, _, _, H)", "A-H", "[1-8]"),
                  ("expand8([1,2,3,4,5,6,7,8,9], _, _, _, _, _, _, _, _)", False)],
    "expand9/10": [("expand9([1,2,3,4,5,6,7,8,9], A, _, _, _, _, _, _, _, I)", "A-I", "[1-9]"),
                   ("expand9([1,2,3,4,5,6,7,8], _, _, _, _, _, _, _, _, _)", False)],
    "odd/1": [("odd(3)", True), ("odd(4)", False)],
    "even/1": [("even(4)", True), ("even(3)", False)],
    "first/2": [("first([a, b, c], X)", "X", "[a]"), ("first([], _)", False)],
    "last/2": [("last([a, b, c], X)", "X", "[c]"), ("last([], _)", False)],
    "prepend/3": [("prepend(x, [a, b], X)", "X", "[[x,a,b]]"), ("prepend(x, [a], [a, x])", False)],
    "droplast/2": [("droplast([a, b, c], X)", "X", "[[a,b]]"), ("droplast([], _)", False)],
    "middle/2": [("middle([a, b, c, d], X)", "X", "[[b,c]]"), ("middle([a], _)", False)],
    "getmiddle/2": [("getmiddle([a, b, c], X)", "X", "[b]"),
                    ("getmiddle([a, b, c, d], _)", False),    # no middle of an even list
                    ("getmiddle([a, b], _)", False)],
    "dropmiddle/2": [("dropmiddle([a, b, c], X)", "X", "[[a,c]]"),
                     ("dropmiddle([a, b], _)", False)],
    "less_eq/2": [("less_eq(2, 2)", True), ("less_eq(3, 2)", False)],
    "less/2": [("less(1, 2)", True), ("less(2, 2)", False)],
    "greater/2": [("greater(3, 2)", True), ("greater(2, 2)", False)],
    "same/2": [("same(a, a)", True), ("same(a, b)", False)],
    "different/2": [("different(a, b)", True), ("different(a, a)", False)],
    "house/1": [(f"house({HOUSE})", True),
                ("house(stack([triangle_red_small, square_blue_large]))", False),
                ("house(stack([square_red_small, triangle_red_small]))", False)],
    "car/1": [("car(side_by_side([circle_red_small, circle_red_small]))", True),
              ("car(side_by_side([circle_red_small, circle_blue_small]))", False)],
    "tower/1": [("tower(stack([square_red_small, square_blue_small, square_green_small]))", True),
                ("tower(stack([square_red_small]))", False),
                ("tower(stack([square_red_small, square_red_small, square_red_small, "
                 "square_red_small]))", False)],
    "wagon/1": [("wagon(side_by_side([square_red_large, square_blue_large]))", True),
                ("wagon(stack([square_red_large, square_blue_large]))", False)],
    "traffic_light/1": [
        ("traffic_light(stack([circle_red_small, circle_yellow_small, circle_green_small]))",
         True),
        ("traffic_light(stack([circle_green_small, circle_yellow_small, circle_red_small]))",
         False)],
    "is_named_object/2": [(f"is_named_object({HOUSE}, X)", "X", "[house]"),
                          ("is_named_object(stack([circle_red_small]), _)", False)],
    "symmetric_list/1": [("symmetric_list([a, b, a])", True), ("symmetric_list([a, b])", False)],
    "forall_shared_shape/2": [
        (f"forall_shared_shape(grid([stack([circle_red_small, {S}]), in([{C}])]), X)", "X",
         "[circle]"),
        (f"forall_shared_shape(grid([stack([{S}]), in([{C}])]), _)", False)],
    "forall_shared_color/2": [
        (f"forall_shared_color(grid([stack([circle_red_small]), in([{S}])]), X)", "X", "[red]"),
        (f"forall_shared_color(grid([stack([circle_red_small]), in([{C}])]), _)", False)],
    "forall_shared_named_obj/2": [
        (f"forall_shared_named_obj(grid([side_by_side([{HOUSE}]), "
         "in([stack([triangle_blue_large, square_blue_large])])]), X)", "X", "[house]"),
        (f"forall_shared_named_obj(grid([side_by_side([{HOUSE}]), in([{C}])]), _)", False)],
    "pseudo_palindrome/1": [
        (f"pseudo_palindrome([circle_red_small, {S}, circle_green_small])", True),
        ("pseudo_palindrome([circle_red_small, square_blue_large])", False),
        (f"pseudo_palindrome([{HOUSE}, {C}, stack([triangle_blue_large, square_blue_large])])",
         False)],
    "pseudo_palindrome2/1": [
        (f"pseudo_palindrome2([{HOUSE}, {C}, stack([triangle_blue_large, square_blue_large])])",
         True),
        (f"pseudo_palindrome2([{HOUSE}, {C}])", False)],
}

#: the pointer encoding: compositions are ids with defined_as(Id, Operator, Children) facts
POINTER_FACTS = ["defined_as(c0, stack, [triangle_red_small, c1])",
                 "defined_as(c1, in, [circle_blue_large])",
                 "defined_as(h0, stack, [triangle_red_small, square_red_small])"]
POINTER: dict[str, list[tuple]] = {
    "extract_operator/2": [("extract_operator(c0, X)", "X", "[stack]"),
                           (f"extract_operator({T}, _)", False)],
    "extract_children/2": [("extract_children(c1, X)", "X", f"[[{C}]]"),
                           ("extract_children(zz, _)", False)],
    "extract_op_and_chld/3": [("extract_op_and_chld(c0, O, L)", "O-L", f"[stack-[{T},c1]]"),
                              (f"extract_op_and_chld({T}, _, _)", False)],
    "contains/2": [("contains(c0, X)", "X", f"[{T},c1]"), (f"contains({T}, _)", False)],
    "recursive_contains/2": [("recursive_contains(c0, X)", "X", f"[{T},{C}]"),
                             (f"recursive_contains({C}, _)", False)],
    "house/1": [("house(h0)", True), ("house(c0)", False)],
}


def offered() -> set[str]:
    out: set[str] = set()
    for enc in bias.ENCODINGS:
        for kb in bias.KBS:
            out |= set(bias.determinations(enc, kb))
    return out - NOT_OURS


def _module(encoding: str) -> str:
    prolog.use("prolog/kandy_ilp.pl")
    return prolog.once("kandy_ilp:ilp_bk_module(E, large, M)", E=encoding)["M"]


def _run(module: str, case: tuple) -> tuple[object, object]:
    """(expected, got) of one case. The case's text is read inside Prolog, so its variables
    are not the query's (janus returns every named variable of a query)."""
    if len(case) == 2:
        goal, want = case
        got = prolog.once("term_string(_G, Text), ( M:_G -> A = true ; A = false )",
                          Text=goal, M=module)["A"]
        return want, got == "true"
    goal, template, want = case
    got = prolog.once("term_string(_TG, Text), _TG = _T-_G, findall(_T, M:_G, _L), "
                      "format(atom(A), '~q', [_L])", Text=f"({template})-({goal})",
                      M=module)["A"]
    return want, got


def test_every_offered_predicate_has_hand_labelled_cases():
    missing = []
    for pi in sorted(offered()):
        cases = NATURAL.get(pi, [])
        succeed = [c for c in cases if len(c) == 3 or c[1] is True]
        fail = [c for c in cases if len(c) == 2 and c[1] is False]
        if not succeed or not fail:
            missing.append(pi)
    assert not missing, f"offered to Aleph without a succeeding and a failing case: {missing}"
    structure = {"extract_operator/2", "extract_children/2", "extract_op_and_chld/3",
                 "contains/2", "recursive_contains/2"}
    assert structure <= set(POINTER), "the pointer encoding defines these differently"


@pytest.mark.parametrize("pi", sorted(NATURAL))
def test_natural_encoding_cases(pi):
    module = _module("natural")
    for case in NATURAL[pi]:
        want, got = _run(module, case)
        assert got == want, f"{case[0]}: expected {want}, got {got}"


def test_pointer_encoding_cases():
    module = _module("pointer")
    prolog.once("retractall(M:defined_as(_, _, _))", M=module)
    try:
        for fact in POINTER_FACTS:
            prolog.once("term_string(_F, Text), assertz(M:_F)", Text=fact, M=module)
        for pi, cases in POINTER.items():
            for case in cases:
                want, got = _run(module, case)
                assert got == want, f"{pi} {case[0]}: expected {want}, got {got}"
    finally:
        prolog.once("retractall(M:defined_as(_, _, _))", M=module)
