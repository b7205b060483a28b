:- module(rudas_generate,
          [ generate/3,              % +Params:dict, +Dir, -Summary:dict
            generate_safe/4,         % +Params:dict, +Dir, -Summary:dict, -Error:string
            resolve_params/2,        % +Params:dict, -Resolved:dict
            generate_rules/3,        % +Resolved:dict, -Graph, -Rules
            size_class/3,            % ?Class, ?Min, ?Max
            write_rules/2,           % +File, +Rules
            write_facts/2,           % +File, +Facts
            rule_string/2            % +Rule, -String
          ]).
/** <module> RuDaS dataset generator: rule graphs, fact generation, open world and noise

Implements §3–4 of Cornelio & Thost, "RuDaS: Synthetic Datasets for Rule Learning and
Evaluation Tools". Parameters are a dict (see resolve_params/2 for the keys and defaults);
generate/3 writes one dataset folder in the RuDaS layout:

| file                | set                                               |
|---------------------|---------------------------------------------------|
| rules.txt           | the rules R                                       |
| train.txt           | D_OW+Noise (the training set)                     |
| train-support.txt   | S        | train-conseqs.txt | C                      |
| train-cw.txt        | D = S ∪ C                                          |
| train-ow.txt        | D_OW     | train-cw-n.txt    | D_Noise (D with noise) |
| test.txt            | the consequences removed for n_OW                  |
| eval-support.txt    | S'       | eval-conseqs.txt  | C' = I(R,S')           |
| eval-cw.txt         | S' ∪ C'                                            |
| relations.txt, entities.txt, log.txt, aleph/TARGET.b, .f, .n, train.tsv, test.tsv |

All randomness comes from set_random(seed(Seed)): the same parameters give the same files.
Errors in the parameters throw rudas_error(Message).
*/
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(random)).
:- use_module(library(pairs)).
:- use_module(library(yall)).
:- use_module(library(dicts)).
:- use_module(chase).
:- use_module('../progress').
:- use_module(messages, []).          % how rudas_error/1 prints

%!  size_class(?Class:atom, ?Min:integer, ?Max:integer) is nondet.
%
%   Number of training facts of each size class (paper §3); x2l and beyond extend it.
size_class(xs, 50, 100).
size_class(s, 101, 1000).
size_class(m, 1001, 10000).
size_class(l, 10001, 100000).
size_class(xl, 100001, 500000).
size_class(x2l, 500001, 2500000).

default(seed, 0).
default(category, chain).
default(size, xs).
default(n_facts, auto).
default(depth, 2).
default(min_components, 1).
default(max_components, 1).
default(n_predicates, auto).
default(n_constants, auto).
default(min_arity, 2).
default(max_arity, 2).
default(max_body, 2).
default(max_rules, inf).
default(max_or, 2).
default(n_ow, 0.3).
default(noise_minus, 0.2).
default(noise_plus, 0.1).
default(n_dg, 2).
default(n_skip, 4).
default(p_h, 0.2).
default(p_v, 0.6).
default(p_c, 0.02).
default(p_recursion, 0.0).
default(common_target, false).
default(ow_split, true).
default(eval_ratio, 0.25).
default(aleph, true).

%!  resolve_params(+Params:dict, -Resolved:dict) is det.
%
%   Fill in defaults and check consistency. Keys (defaults): seed (0), category
%   (chain|rdg|drdg|mixed), size (xs|s|m|l|xl|x2l), n_facts (auto: drawn inside the size
%   class), depth (2, the maximal depth), min_components/max_components (1/1),
%   n_predicates (auto), n_constants (auto), min_arity/max_arity (2/2), max_body (2),
%   max_rules (inf), max_or (2, alternatives below an OR node), n_ow (0.3), noise_minus
%   (0.2), noise_plus (0.1), n_dg (2), n_skip (4), p_h (0.2), p_v (0.6), p_c (0.02; p_f is
%   the rest), p_recursion (0), common_target (false), ow_split (true), eval_ratio (0.25).
resolve_params(Params, Resolved) :-
    findall(K-V, ( default(K, D), ( get_dict(K, Params, V0), V0 \== null -> V = V0 ; V = D ) ), Pairs),
    dict_pairs(R0, params, Pairs),
    forall(get_dict(K, Params, _),
           ( default(K, _) -> true ; err("unknown parameter '~w'", [K]) )),
    check_params(R0),
    size_target(R0, R1),
    counts(R1, Resolved).

err(Fmt, Args) :- format(string(S), Fmt, Args), throw(rudas_error(S)).

check_params(P) :-
    must(memberchk(P.category, [chain, rdg, drdg, mixed]),
         "category must be chain, rdg, drdg or mixed, not '~w'", [P.category]),
    must(size_class(P.size, _, _), "size must be one of xs, s, m, l, xl, x2l, not '~w'", [P.size]),
    forall(member(K, [seed, depth, min_components, max_components, min_arity, max_arity,
                      max_body, max_or, n_dg, n_skip]),
           must(integer(P.K), "~w must be an integer, not ~w", [K, P.K])),
    must(P.depth >= 1, "depth must be >= 1", []),
    must(P.min_arity >= 1, "min_arity must be >= 1", []),
    must(P.max_arity >= P.min_arity, "max_arity (~w) < min_arity (~w)", [P.max_arity, P.min_arity]),
    must(P.max_body >= 1, "max_body (maximal rule length) must be >= 1", []),
    must(P.min_components >= 1, "min_components must be >= 1", []),
    must(P.max_components >= P.min_components,
         "max_components (~w) < min_components (~w)", [P.max_components, P.min_components]),
    must(P.n_dg >= 1, "n_dg must be >= 1", []),
    must(P.n_skip >= 1, "n_skip must be >= 1", []),
    must(P.max_or >= 2, "max_or must be >= 2", []),
    forall(member(K, [n_ow, noise_minus, p_h, p_v, p_c, p_recursion]),
           must(( number(P.K), P.K >= 0, P.K =< 1 ), "~w must be in [0, 1], not ~w", [K, P.K])),
    must(( number(P.noise_plus), P.noise_plus >= 0, P.noise_plus < 1 ),
         "noise_plus must be in [0, 1), not ~w", [P.noise_plus]),
    must(P.p_h + P.p_v + P.p_c =< 1.0000001, "p_h + p_v + p_c must be <= 1", []),
    must(( number(P.eval_ratio), P.eval_ratio > 0 ), "eval_ratio must be > 0", []),
    (   memberchk(P.category, [rdg, drdg]) ; P.category == mixed
    ->  must(P.depth >= 2, "category ~w needs depth >= 2 (a rule with child rules)", [P.category])
    ;   true ),
    (   P.category == rdg
    ->  must(P.max_body >= 2, "category rdg needs max_body >= 2 (a rule with two child rules)", [])
    ;   true ),
    (   P.category == mixed
    ->  must(P.max_components >= 2, "category mixed needs max_components >= 2", [])
    ;   true ),
    (   P.max_arity > P.max_body * P.max_arity -> true ; true ).

must(G, Fmt, Args) :- ( catch(G, _, fail) -> true ; err(Fmt, Args) ).

size_target(P, P1) :-
    size_class(P.size, Lo, Hi),
    (   P.n_facts == auto
    ->  set_random(seed(P.seed)),
        Span is Hi - Lo,
        A is Lo + Span // 10, B is Lo + Span // 2,
        random_between(A, B, T)
    ;   must(integer(P.n_facts), "n_facts must be an integer", []),
        T = P.n_facts,
        must(( T >= Lo, T =< Hi ), "n_facts ~w is outside size class ~w (~w..~w)", [T, P.size, Lo, Hi])
    ),
    P1 = P.put(_{target:T, size_min:Lo, size_max:Hi}).

%   Smallest number of head predicates a component of each category needs.
min_heads(chain, D, D).
min_heads(rdg, D, H) :- H is D + 1.
min_heads(drdg, D, D).
min_heads(mixed, D, H) :- H is D + 1.

counts(P, P2) :-
    min_heads(P.category, P.depth, H0),
    (   P.category == mixed -> MinC is max(2, P.min_components) ; MinC = P.min_components ),
    (   P.common_target == true -> MinHeads is H0 + (MinC - 1) * (H0 - 1) ; MinHeads is H0 * MinC ),
    Need is MinHeads + 1,
    (   P.n_predicates == auto
    ->  NP is Need + 2 + P.max_components
    ;   NP = P.n_predicates,
        must(integer(NP), "n_predicates must be an integer", []),
        must(NP >= Need,
             "depth ~w with category ~w and ~w component(s) needs at least ~w predicates, got ~w",
             [P.depth, P.category, MinC, Need, NP])
    ),
    (   P.n_constants == auto
    ->  NC is max(20, round(0.6 * P.target))
    ;   NC = P.n_constants,
        must(( integer(NC), NC >= 1 ), "n_constants must be a positive integer", [])
    ),
    % an upper bound on distinct facts: every predicate over every constant tuple
    MaxFacts is NP * NC ^ P.max_arity,
    must(MaxFacts >= P.size_min * 2,
         "size class ~w (>= ~w facts) is impossible with ~w constants and ~w predicates of arity <= ~w",
         [P.size, P.size_min, NC, NP, P.max_arity]),
    P2 = P.put(_{n_predicates:NP, n_constants:NC}).

%!  generate_safe(+Params:dict, +Dir, -Summary:dict, -Error:string) is det.
%
%   As generate/3, but a parameter error binds Error to its message (else Error = "").
generate_safe(Params, Dir, Summary, Error) :-
    catch(( generate(Params, Dir, Summary), Error = "" ),
          rudas_error(Error), Summary = _{}).

%!  generate(+Params:dict, +Dir, -Summary:dict) is det.
%
%   Generate a dataset into the existing folder Dir. Summary holds the resolved parameters,
%   the rules, the rule graph and the number of facts of each set.
generate(Params, Dir, Summary) :-
    resolve_params(Params, P),
    set_random(seed(P.seed)),
    progress('rules', 0, none),
    generate_rules(P, Graph, Rules),
    Graph = graph(Comps, Nodes, Preds, Targets),
    constants(P, Consts),
    facts_attempts(P, 1, none, Nodes, Comps, Rules, Consts, Targets, Preds, Sets-Uncovered),
    progress('writing files', 0, none),
    write_dataset(Dir, P, Rules, Preds, Targets, Sets),
    summary(P, Graph, Rules, Sets, Summary0),
    Summary = Summary0.put(uncovered, Uncovered).

constants(P, Consts) :-
    N is P.n_constants - 1,
    numlist(0, N, Is),
    maplist([I, C]>>format(atom(C), "c~d", [I]), Is, Cs),
    Consts =.. [consts|Cs].

%!  generate_rules(+P:dict, -Graph, -Rules:list) is det.
%
%   Graph = graph(Components, Nodes, Preds, Targets): Components is a list of
%   comp(Id, Category, Depth); Nodes a list of node(Id, Comp, Level, ParentId, Rule)
%   (ParentId is `none` for roots); Preds a list of Name/Arity; Targets the root head
%   predicates. Rules are rule(Head, Body) terms in node order.
generate_rules(P, graph(Comps, Nodes, Preds, Targets), Rules) :-
    between(1, 200, _),
    catch(try_rules(P, Comps, Nodes, Preds, Targets, Rules), rudas_retry, fail),
    !.
generate_rules(P, _, _) :-
    err("could not build a rule graph of category ~w and depth ~w with ~w predicates, max_body ~w and max_rules ~w; allow more predicates or rules",
        [P.category, P.depth, P.n_predicates, P.max_body, P.max_rules]).

try_rules(P, Comps, Nodes, Preds, Targets, Rules) :-
    MinC = P.min_components, MaxC = P.max_components,
    (   P.category == mixed -> MinC1 is max(2, MinC) ; MinC1 = MinC ),
    random_between(MinC1, MaxC, NC),
    component_categories(P.category, NC, Cats),
    NP = P.n_predicates,
    NP1 is NP - 1, numlist(0, NP1, PIs),
    maplist([I, Nm]>>format(atom(Nm), "p~d", [I]), PIs, Names0),
    random_permutation(Names0, Names),
    maplist(pred_arity(P), Names, Preds0),
    % structure of every component (shapes only)
    findall(C-Cat, nth1(C, Cats, Cat), CCs),
    maplist(comp_shape(P), CCs, Shapes, Comps),
    % head predicates: one per OR group
    foldl(count_groups, Shapes, 0, NGroups),
    (   P.common_target == true -> NHeads is NGroups - NC + 1 ; NHeads = NGroups ),
    (   NHeads >= NP -> throw(rudas_retry) ; true ),
    (   P.max_rules \== inf, foldl(count_rules, Shapes, 0, NR), NR > P.max_rules -> throw(rudas_retry) ; true ),
    length(HeadPreds, NHeads),
    append(HeadPreds, BasePreds, Preds0),
    nb_setval(rudas_next_head, 1),
    nb_setval(rudas_rule_id, 0),
    maplist(build_component(P, HeadPreds, BasePreds), Shapes, NodeLists, Targets0),
    append(NodeLists, Nodes),
    maplist([node(_, _, _, _, R), R]>>true, Nodes, Rules),
    sort(Targets0, Targets),
    msort(Preds0, Preds1),
    predsort(cmp_pred, Preds1, Preds).

cmp_pred(O, N1/_, N2/_) :-
    sub_atom(N1, 1, _, 0, A1), sub_atom(N2, 1, _, 0, A2),
    atom_number(A1, I1), atom_number(A2, I2), compare(O, I1, I2).

pred_arity(P, Name, Name/A) :- random_between(P.min_arity, P.max_arity, A).

component_categories(mixed, N, Cats) :- !,
    random_permutation([chain, rdg, drdg], [A, B|_]),
    N2 is N - 2, length(Rest, N2),
    maplist([C]>>random_member(C, [chain, rdg, drdg]), Rest),
    append([A, B], Rest, Cats).
component_categories(Cat, N, Cats) :- length(Cats, N), maplist(=(Cat), Cats).

%   A shape is shape(CompId, Cat, Depth, Tree); Tree = t(NBody, Slots) where Slots is a list
%   of NBody slot terms: base | rec | exp(Alternatives) with Alternatives a list of Trees.
comp_shape(P, C-Cat, shape(C, Cat, D, Tree), comp(C, Cat, D)) :-
    (   C == 1 -> D = P.depth
    ;   ( Cat == chain -> Lo = 1 ; Lo = 2 ), Lo1 is min(Lo, P.depth), random_between(Lo1, P.depth, D)
    ),
    shape_tree(P, Cat, 1, D, true, Tree),
    (   tree_depth(Tree, D) -> true ; throw(rudas_retry) ),
    (   Cat == rdg, \+ tree_has_branch(Tree) -> throw(rudas_retry) ; true ),
    (   Cat == drdg, \+ tree_has_or(Tree) -> throw(rudas_retry) ; true ).

%   shape_tree(+P, +Cat, +Level, +Depth, +OnSpine, -Tree): OnSpine nodes must reach Depth.
shape_tree(P, Cat, L, D, Spine, t(NB, Slots)) :-
    MaxB = P.max_body,
    (   L < D
    ->  (   Cat == chain -> KMin = 1, KMax = 1
        ;   Spine == true, L =:= 1, Cat == rdg -> KMin = 2, KMax = MaxB
        ;   Spine == true -> KMin = 1, KMax = MaxB
        ;   KMin = 0, KMax = MaxB
        ),
        random_between(KMin, KMax, K0),
        ( Cat \== chain, Spine \== true, random(R), R < 0.3 -> K = 0 ; K = K0 )
    ;   K = 0
    ),
    KB is max(K, 1),
    random_between(KB, MaxB, NB0),
    NB is max(NB0, K),
    length(Slots0, NB),
    numlist(1, NB, Idx), random_permutation(Idx, Perm),
    length(ExpIdx, K), append(ExpIdx, _, Perm),
    L1 is L + 1,
    maplist(slot(P, Cat, L1, D, Spine, ExpIdx), Idx, Slots0, Slots1),
    recursion(P, Slots1, Slots).

slot(P, Cat, L1, D, Spine, ExpIdx, I, _, Slot) :-
    (   memberchk(I, ExpIdx)
    ->  ExpIdx = [First|_],
        ( I == First -> Sp = Spine ; Sp = false ),
        (   Cat == drdg
        ->  ( Sp == true, L1 =:= 2 -> NA = 2 ; random_between(1, P.max_or, NA0), ( random(R), R < 0.5 -> NA = 1 ; NA = NA0 ) ),
            length(Alts, NA),
            alt_spines(Alts, Sp, Spines),
            maplist(shape_alt(P, Cat, L1, D), Alts, Spines)
        ;   shape_tree(P, Cat, L1, D, Sp, T), Alts = [T]
        ),
        Slot = exp(Alts)
    ;   Slot = base
    ).

alt_spines([_|T], Sp, [Sp|Fs]) :- maplist(=(false), Fs), length(T, N), length(Fs, N).

recursion(P, Slots, Slots1) :-
    (   P.p_recursion > 0, random(R), R < P.p_recursion,
        nth1(I, Slots, base)
    ->  nth1(I, Slots, _, Rest), nth1(I, Slots1, rec, Rest)
    ;   Slots1 = Slots
    ).

tree_depth(t(_, Slots), D) :-
    findall(D1, ( member(exp(Alts), Slots), member(T, Alts), tree_depth(T, D1) ), Ds),
    ( Ds == [] -> D = 1 ; max_list(Ds, M), D is M + 1 ).
tree_has_branch(t(_, Slots)) :-
    (   include([S]>>(S = exp(_)), Slots, Es), length(Es, N), N >= 2 -> true
    ;   member(exp(Alts), Slots), member(T, Alts), tree_has_branch(T) ).
tree_has_or(t(_, Slots)) :-
    member(exp(Alts), Slots), ( Alts = [_, _|_] -> true ; member(T, Alts), tree_has_or(T) ), !.

count_groups(shape(_, _, _, T), N0, N) :- groups(T, G), N is N0 + G.
groups(t(_, Slots), G) :-
    findall(G1, ( member(exp(Alts), Slots), maplist(groups, Alts, Gs), sum_list(Gs, G1) ), G0s),
    findall(x, member(exp(_), Slots), Xs), length(Xs, NX),
    sum_list(G0s, S), G is 1 + NX + S - NX.   % 1 for the node's own group
count_rules(shape(_, _, _, T), N0, N) :- rules_in(T, R), N is N0 + R.
rules_in(t(_, Slots), R) :-
    findall(R1, ( member(exp(Alts), Slots), member(T, Alts), rules_in(T, R1) ), Rs),
    sum_list(Rs, S), R is S + 1.

%   Turn a shape into rules. Head predicates are taken from the shared pool in order; the
%   root of a component with common_target takes the first head predicate.
build_component(P, HeadPreds, BasePreds, shape(C, _Cat, _D, Tree), Nodes, Target) :-
    (   P.common_target == true
    ->  HeadPreds = [Target|_],
        ( C == 1 -> next_head(HeadPreds, _) ; true )
    ;   next_head(HeadPreds, Target)
    ),
    Target = TN/TA,
    functor(Head, TN, TA),
    build_node(P, HeadPreds, BasePreds, C, 1, none, Head, Tree, Nodes, []).

b_getval_default(K, D, V) :- ( nb_current(K, V) -> true ; V = D ).

next_head(HeadPreds, H) :-
    nb_getval(rudas_next_head, I),
    nth1(I, HeadPreds, H),
    I1 is I + 1, nb_setval(rudas_next_head, I1).

build_node(P, HeadPreds, BasePreds, C, Level, Parent, Head, t(_, Slots), [Node|Ns0], Ns) :-
    nb_getval(rudas_rule_id, RI0), RI is RI0 + 1, nb_setval(rudas_rule_id, RI),
    format(atom(Id0), "r~d", [RI]),
    Node = node(Id0, C, Level, Parent, rule(Head, Body)),
    functor(Head, HN, HA),
    % body atoms: expanded slots take a fresh head predicate, base ones a base predicate
    maplist(slot_atom(HeadPreds, BasePreds, HN/HA), Slots, Atoms, Kids),
    fill_productive(P, Head, Atoms),
    Body = Atoms,
    Level1 is Level + 1,
    foldl(build_kids(P, HeadPreds, BasePreds, C, Level1, Id0), Kids, Ns0, Ns).

slot_atom(_, BasePreds, _, base, A, none) :- random_member(N/Ar, BasePreds), functor(A, N, Ar).
slot_atom(_, _, HN/HA, rec, A, none) :- functor(A, HN, HA).
slot_atom(HeadPreds, _, _, exp(Alts), A, kids(A, Alts)) :-
    next_head(HeadPreds, N/Ar), functor(A, N, Ar).

build_kids(_, _, _, _, _, _, none, Ns, Ns) :- !.
build_kids(P, HP, BP, C, Level, Parent, kids(Atom, Alts), Ns0, Ns) :-
    functor(Atom, N, A),
    foldl(build_alt(N, A, P, HP, BP, C, Level, Parent), Alts, Ns0, Ns).

build_alt(N, A, P, HP, BP, C, Level, Parent, T, L0, L) :-
    functor(H, N, A), build_node(P, HP, BP, C, Level, Parent, H, T, L0, L).

%   fill_terms/3, redrawn (up to 50 times, then the whole rule graph is redrawn) while a
%   body atom equals the head: a recursive atom must differ from the head, so that
%   recursion is productive (`p3(X0,X1) :- p3(X0,X1)` derives nothing). Without a recursive
%   slot no body atom can equal the head (the head predicate is fresh), so the first draw is
%   kept and the random stream is the one of earlier versions.
fill_productive(P, Head, Atoms) :-
    between(1, 50, _),
    copy_term(Head-Atoms, H1-A1),
    fill_terms(P, H1, A1),
    \+ ( member(B, A1), B == H1 ),
    !,
    Head = H1, Atoms = A1.
fill_productive(_, _, _) :- throw(rudas_retry).

%   Head variables at distinct random positions of the body, then the other positions by
%   the probabilities p_h, p_v, p_c, p_f of §4: a head variable (p_h), a variable already
%   introduced in the body (p_v), a constant (p_c), a fresh variable (p_f). A p_v draw when
%   no body variable is introduced yet gives a fresh variable (the first introduction), never
%   a constant: constants occur with probability p_c exactly (none with p_c = 0).
fill_terms(P, Head, Atoms) :-
    Head =.. [_|HVs],
    findall(A-I, ( nth1(K, Atoms, At), functor(At, _, Ar), between(1, Ar, I), A = K ), Pos),
    length(HVs, NH), length(Pos, NPos),
    (   NPos < NH -> throw(rudas_retry) ; true ),
    random_permutation(Pos, Perm),
    length(HPos, NH), append(HPos, _, Perm),
    pairs_keys_values(HPairs, HPos, HVs),
    foldl(fill_pos(P, Atoms, HVs, HPairs), Pos, [], _),
    true.

fill_pos(P, Atoms, HVs, HPairs, K-I, Seen0, Seen) :-
    nth1(K, Atoms, At), arg(I, At, T),
    (   member((K-I)-V, HPairs) -> T = V, Seen = Seen0
    ;   random(R),
        (   R < P.p_h -> random_member(T, HVs), Seen = Seen0
        ;   R < P.p_h + P.p_v
        ->  (   Seen0 \== []
            ->  random_member(T, Seen0), Seen = Seen0
            ;   Seen = [T|Seen0]                % nothing introduced yet: a fresh variable
            )
        ;   R < P.p_h + P.p_v + P.p_c
        ->  NC1 is P.n_constants - 1, random_between(0, NC1, CI),
            format(atom(T), "c~d", [CI]), Seen = Seen0
        ;   Seen = [T|Seen0]
        )
    ).

% ---------------------------------------------------------------------------------------
% Facts

%   One instantiation can add many consequences at once (rules with existential body
%   variables join widely), so a training set may miss its size class; then the facts are
%   drawn again, up to 20 times, and if no draw fits the generator fails with an error
%   (it never writes a dataset outside its size class).
%
%   For S' every component's first instantiation is a full one (every OR alternative;
%   grow_loop), so every rule has an instance in S' ∪ C'. The training sets (D = S ∪ C, and
%   D with n_OW and noise applied) are grown to their size class first and can miss a rule
%   (an OR alternative never chosen, an instance removed by noise); a draw inside the size class is redrawn
%   (within the first 10 attempts) while a rule has no instantiation (its body true for some
%   grounding) in S' ∪ C', D or the training set. If no such draw comes, the first draw
%   inside the size class is kept and Uncovered = _{eval:Ids, train_cw:Ids, train:Ids} names
%   the rules without an instance (written to the manifest as uncovered_rules).
facts_attempts(P, K, First, Nodes, Comps, Rules, Consts, Targets, Preds, Result) :-
    nb_setval('$rudas_attempt', K),
    facts_phase(P, Nodes, Comps, Rules, Consts, Targets, Preds, Sets0),
    length(Sets0.train, N),
    (   N >= P.size_min, N =< P.size_max
    ->  progress('rule coverage', 0, none),
        uncovered_rules(Nodes, Sets0, Unc),
        (   Unc == _{eval:[], train_cw:[], train:[]}
        ->  Result = Sets0-Unc
        ;   ( First == none -> First1 = Sets0-Unc ; First1 = First ),
            (   K >= 10
            ->  Result = First1
            ;   K1 is K + 1,
                facts_attempts(P, K1, First1, Nodes, Comps, Rules, Consts, Targets, Preds, Result)
            )
        )
    ;   First \== none, K >= 10
    ->  Result = First
    ;   K >= 20
    ->  length(Rules, NR),
        err("could not draw a training set inside size class ~w (~w..~w facts) in 20 attempts (the last had ~w): one instantiation of the ~w rules adds too many facts; use a larger size class, fewer components or a smaller depth, or set n_facts",
            [P.size, P.size_min, P.size_max, N, NR])
    ;   K1 is K + 1,
        facts_attempts(P, K1, First, Nodes, Comps, Rules, Consts, Targets, Preds, Result)
    ).

%!  uncovered_rules(+Nodes, +Sets, -Uncovered:dict) is det.
%
%   Ids of the rules whose body holds for no grounding in S' ∪ C' (eval) and in the
%   training set (train).
uncovered_rules(Nodes, Sets, _{eval:E, train_cw:D, train:T}) :-
    uncovered_in(Nodes, Sets.eval_cw, E),
    uncovered_in(Nodes, Sets.cw, D),
    uncovered_in(Nodes, Sets.train, T).

uncovered_in(Nodes, Facts, Ids) :-
    M = rudas_cover_db,
    forall(member(node(_, _, _, _, rule(_, B)), Nodes),
           forall(member(A, B), ( functor(A, N, Ar), dynamic(M:N/Ar) ))),
    forall(member(F, Facts), ( functor(F, N, Ar), dynamic(M:N/Ar), assertz(M:F) )),
    findall(Id, ( member(node(Id, _, _, _, rule(_, B)), Nodes),
                  \+ body_holds(M, B) ), Ids),
    forall(( current_predicate(M:N/Ar), functor(H, N, Ar),
             \+ predicate_property(M:H, imported_from(_)) ),
           retractall(M:H)).

body_holds(M, B) :- copy_term(B, B1), once(maplist(call_in(M), B1)).
call_in(M, A) :- call(M:A).

facts_phase(P, Nodes, Comps, Rules, Consts, Targets, Preds, Sets) :-
    make_index(Nodes, Index),
    length(Comps, NComps),
    % training part: S and C
    Goal = P.target,
    grow(P, Index, NComps, Rules, Consts, Goal, train, S, C),
    EvalGoal is max(20, round(P.eval_ratio * P.target)),
    grow(P, Index, NComps, Rules, Consts, EvalGoal, eval, S1, C1),
    progress('open world and noise', 0, none),
    msort(S, SS), msort(C, CS), msort(S1, SS1), msort(C1, CS1),
    open_world(P, Targets, CS, CKept, CRemoved),
    noise(P, Targets, Preds, Consts, SS, CS, CKept, SKept, Plus, PlusT, SS1, CS1),
    append([SKept, CKept, Plus, PlusT], Train0), msort(Train0, Train),
    append(SS, CS, D0), msort(D0, D),
    append(SS, CKept, OW0), msort(OW0, OW),
    append([SKept, CS, Plus, PlusT], DN0), msort(DN0, DN),
    append(SS1, CS1, E0), msort(E0, ECW),
    Sets = sets{support:SS, conseqs:CS, cw:D, ow:OW, cwn:DN, train:Train, test:CRemoved,
                eval_support:SS1, eval_conseqs:CS1, eval_cw:ECW,
                noise_minus:SRemovedN, noise_plus:Plus, noise_plus_target:PlusT},
    subtract_sorted(SS, SKept, SRemovedN).

subtract_sorted(A, B, C) :- ord_subtract(A, B, C).

make_index(Nodes, Index) :-
    findall(C-N, ( member(N, Nodes), N = node(_, C, _, _, _) ), Pairs),
    sort(1, @=<, Pairs, Sorted),
    group_pairs_by_key(Sorted, Index).

%   grow(+P, +Index, +NComps, +Rules, +Consts, +Goal, +Phase, -S, -C)
%   Instantiate the rule graphs until the estimated final size reaches Goal.
grow(P, Index, _NComps, Rules, Consts, Goal, Phase, S, C) :-
    size_class(P.size, _, Hi0),
    ( Phase == train -> Hi = Hi0 ; Hi = inf ),
    setup_call_cleanup(
        store_new(Store, Rules),
        grow_loop(P, Index, Store, Consts, Goal, Hi, Phase, 0, 0, 0, 0, [], [], S, C),
        store_free(Store)).

grow_loop(P, Index, Store, Consts, Goal, Hi, Phase, Iter, Stall, NS, NC, SAcc, CAcc, S, C) :-
    grow_loop(P, Index, Store, Consts, Goal, Hi, Phase, Iter, Stall, NS, NC, 1, 0, [], SAcc, CAcc,
              S, C).

%   B: the batch size (instantiation rounds before the next saturation); Yield: facts per
%   step in the last batch. Batches double while far from the goal, and shrink to single
%   rounds near it; when one round (every component once) would add more than the room
%   left, B becomes 0: from then on one random component is instantiated per step, so
%   the size class is not overshot by more than one component instantiation.
%   Done lists the components instantiated so far. For S' (Phase eval, no size class) the
%   loop does not stop before every component has been instantiated once, and single steps
%   take a component not yet done first, fully (every OR alternative): every rule then has
%   an instance in S' ∪ C'. The training phase keeps its size class first;
%   its coverage is checked by facts_attempts/10.
grow_loop(P, Index, Store, Consts, Goal, Hi, Phase, Iter, Stall, NS, NC, B0, Yield, Done,
          SAcc, CAcc, S, C) :-
    estimate(P, Phase, NS, NC, Est),
    grow_progress(Phase, Est, Goal),
    length(Index, NAll), length(Done, NDone),
    (   Est >= Goal, ( Phase == train -> true ; NDone >= NAll )
    ->  append(SAcc, S), append(CAcc, C)
    ;   Stall > 200
    ->  err("could not reach ~w facts (size class ~w): only ~w distinct facts after ~w rounds; use more constants (n_constants=~w) or a smaller size",
            [Goal, P.size, Est, Iter, P.n_constants])
    ;   Remaining is Goal - Est,
        length(Index, NComps),
        (   B0 =:= 0
        ->  B1 = 0
        ;   Iter =:= 0, NComps > 1
        ->  B1 = 0                              % the first step: one component
        ;   Yield > 0
        ->  B2 is max(1, min(B0 * 2, floor(Remaining / Yield / 2))),
            (   B2 =:= 1, NComps > 1, Yield * 2 > Remaining
            ->  B1 = 0                          % one round would overshoot: one component
            ;   B1 = B2
            )
        ;   B1 is min(B0 * 2, 4096)
        ),
        ignore(Hi = Hi),
        (   B1 =:= 0
        ->  (   Phase == eval, member(Comp, Index), Comp = K-_, \+ memberchk(K, Done)
            ->  IterB = 0                       % its first instantiation: full (every OR
            ;   random_member(Comp, Index),     % alternative), so every rule has an instance
                IterB = Iter
            ),
            Comp = CK-_, ( memberchk(CK, Done) -> Done1 = Done ; Done1 = [CK|Done] ),
            batch(P, [Comp], IterB, 1, Consts, [], Support), Steps = 1, Rounds = 1 / NComps
        ;   batch(P, Index, Iter, B1, Consts, [], Support), Steps = B1, Rounds = B1,
            pairs_keys(Index, Done1)
        ),
        store_add(Store, Support, New),
        store_saturate(Store, New, [], Derived, _),
        length(New, N1), length(Derived, N2),
        NS1 is NS + N1, NC1 is NC + N2,
        estimate(P, Phase, NS1, NC1, Est1),
        Yield1 is max(0, Est1 - Est) / Rounds,  % per round (every component once)
        Iter1 is Iter + Steps,
        (   B1 =:= 0, Iter =:= 0, Yield1 * 2 =< Goal - Est1 -> BNext = 1 ; BNext = B1 ),
        ( N1 + N2 =:= 0 -> Stall1 is Stall + 1 ; Stall1 = 0 ),
        grow_loop(P, Index, Store, Consts, Goal, Hi, Phase, Iter1, Stall1, NS1, NC1, BNext, Yield1,
                  Done1, [New|SAcc], [Derived|CAcc], S, C)
    ).

%   grow_progress(+Phase, +Estimate, +Goal): report the estimated size against its goal
%   ("training facts", "training facts, attempt K" after a redraw, "evaluation facts").
grow_progress(Phase, Est, Goal) :-
    (   progress_enabled
    ->  ( nb_current('$rudas_attempt', K) -> true ; K = 1 ),
        (   Phase == eval -> Name = 'evaluation facts'
        ;   K =:= 1 -> Name = 'training facts'
        ;   format(atom(Name), "training facts, attempt ~w", [K])
        ),
        progress(Name, Est, Goal)
    ;   true
    ).

estimate(_, eval, NS, NC, Est) :- !, Est is NS + NC.
estimate(P, train, NS, NC, Est) :-
    Base is NS * (1 - P.noise_minus) + NC * (1 - P.n_ow),
    Est is round(Base / (1 - P.noise_plus)).

batch(_, _, _, 0, _, Acc, Acc) :- !.
batch(P, Index, Iter, B, Consts, Acc0, Acc) :-
    Full = ( Iter mod P.n_dg =:= 0 -> true ; false ),
    ( call(Full) -> F = full ; F = diverse ),
    foldl(inst_component(P, F, Consts), Index, Acc0, Acc1),
    Iter1 is Iter + 1, B1 is B - 1,
    batch(P, Index, Iter1, B1, Consts, Acc1, Acc).

%   One instantiation of a component: a fresh assignment top-down, support facts for every
%   instantiated node except the atoms that an instantiated child rule derives.
inst_component(P, Mode, Consts, _C-Nodes, Acc0, Acc) :-
    Nodes = [Root|_],
    inst_node(P, Mode, Consts, Nodes, Root, _, Acc0, Acc).

inst_node(P, Mode, Consts, Nodes, node(Id, _, _, _, Rule0), Head, Acc0, Acc) :-
    copy_term(Rule0, rule(Head0, Body)),
    Head0 = Head,                              % the parent's body atom (or fresh for roots)
    % children grouped by head predicate (an OR group has several)
    findall(N, ( member(N, Nodes), N = node(_, _, _, Id, _) ), Kids),
    foldl(inst_atom(P, Mode, Consts, Nodes, Kids), Body, Acc0, Acc1),
    ground_vars(Consts, rule(Head, Body)),
    Acc = Acc1.

inst_atom(P, Mode, Consts, Nodes, Kids, Atom, Acc0, Acc) :-
    functor(Atom, N, A),
    include(kid_head(N, A), Kids, Alts),
    (   Alts == []
    ->  Acc = [Atom|Acc0]                       % support fact (ground later)
    ;   choose_alts(P, Mode, Alts, Chosen),
        (   Chosen == []
        ->  Acc = [Atom|Acc0]                   % skipped: the atom becomes support
        ;   foldl(inst_kid(P, Mode, Consts, Nodes, Atom), Chosen, Acc0, Acc)
        )
    ).

choose_alts(_, full, Alts, Alts) :- !.
choose_alts(P, diverse, Alts, Chosen) :-
    random(R),
    (   R < 1 / P.n_skip -> Chosen = []
    ;   random_member(K, Alts), Chosen = [K]
    ).

%   Bind the remaining variables of the rule to random constants.
ground_vars(Consts, T) :-
    term_variables(T, Vs),
    functor(Consts, _, N),
    maplist(random_const(N, Consts), Vs).

random_const(N, Consts, V) :- random_between(1, N, I), arg(I, Consts, V).

% Open world: delete n_OW of the consequences (split target / non-target).
open_world(P, Targets, C, Kept, Removed) :-
    (   P.ow_split == true
    ->  partition(is_target(Targets), C, T, NT),
        drop(P.n_ow, T, TK, TR), drop(P.n_ow, NT, NK, NR),
        append(TK, NK, K0), append(TR, NR, R0)
    ;   drop(P.n_ow, C, K0, R0)
    ),
    msort(K0, Kept), msort(R0, Removed).

is_target(Targets, F) :- functor(F, N, A), memberchk(N/A, Targets).

%   drop(+Ratio, +List, -Kept, -Removed): remove round(Ratio*|List|) elements at random.
drop(Ratio, L, Kept, Removed) :-
    length(L, N), K is round(Ratio * N),
    random_permutation(L, Perm),
    length(Removed0, K), append(Removed0, Kept0, Perm),
    msort(Kept0, Kept), msort(Removed0, Removed).

noise(P, Targets, Preds, Consts, S, C, CKept, SKept, Plus, PlusT, ES, EC) :-
    drop(P.noise_minus, S, SKept, _),
    partition(is_target(Targets), CKept, TKept, NTKept),
    length(SKept, NSK), length(NTKept, NNT), length(TKept, NT),
    % S may contain target facts only through recursion; they count as target facts
    partition(is_target(Targets), SKept, TS, _),
    length(TS, NTS),
    A is NSK - NTS + NNT,
    K is round(P.noise_plus * A / (1 - P.noise_plus)),
    TT is NT + NTS,
    KT is round(P.noise_plus * TT / (1 - P.noise_plus)),
    exclude(in_list(Targets), Preds, NonTarget),
    append([S, C, ES, EC], Known),
    fresh_facts(K, NonTarget, Consts, Known, Plus0),
    append(Known, Plus0, Known1),
    fresh_facts(KT, Targets, Consts, Known1, PlusT0),
    msort(Plus0, Plus), msort(PlusT0, PlusT).

fresh_facts(0, _, _, _, []) :- !.
fresh_facts(K, [], _, _, _) :- !,
    err("cannot add ~w noise facts: no predicate outside the rules' targets; allow more predicates", [K]).
fresh_facts(K, Preds, Consts, Known, Facts) :-
    trie_new(Set),
    forall(member(F, Known), ignore(trie_insert(Set, F))),
    Tries is 100 * K + 1000,
    call_cleanup(fresh_loop(K, Tries, Preds, Consts, Set, [], Facts), trie_destroy(Set)).

%   Set holds the known facts and those drawn so far (constant-time membership).
fresh_loop(0, _, _, _, _, Acc, Acc) :- !.
fresh_loop(_, 0, _, _, _, _, _) :- !,
    err("not enough fresh facts for the requested noise_plus; use more constants", []).
fresh_loop(K, T, Preds, Consts, Set, Acc, Facts) :-
    T1 is T - 1,
    random_member(N/A, Preds),
    functor(F, N, A),
    ground_vars(Consts, F),
    (   trie_insert(Set, F)
    ->  K1 is K - 1, fresh_loop(K1, T1, Preds, Consts, Set, [F|Acc], Facts)
    ;   fresh_loop(K, T1, Preds, Consts, Set, Acc, Facts)
    ).

% ---------------------------------------------------------------------------------------
% Output

write_dataset(Dir, P, Rules, Preds, Targets, Sets) :-
    dir_file(Dir, 'rules.txt', RF), write_rules(RF, Rules),
    forall(member(Key-File, [train-'train.txt', support-'train-support.txt',
                             conseqs-'train-conseqs.txt', cw-'train-cw.txt',
                             ow-'train-ow.txt', cwn-'train-cw-n.txt', test-'test.txt',
                             eval_support-'eval-support.txt', eval_conseqs-'eval-conseqs.txt',
                             eval_cw-'eval-cw.txt']),
           ( dir_file(Dir, File, Path), write_facts(Path, Sets.Key) )),
    dir_file(Dir, 'relations.txt', RelF),
    write_lines(RelF, Preds, [N/_, S]>>format(string(S), "~w", [N])),
    append([Sets.cwn, Sets.train, Sets.test, Sets.eval_cw], All),
    findall(C, ( member(Fa, All), arg(_, Fa, C) ), Cs0), sort(Cs0, Cs1),
    predsort(cmp_const, Cs1, Cs),
    dir_file(Dir, 'entities.txt', EF),
    write_lines(EF, Cs, [C, S]>>format(string(S), "~w", [C])),
    dir_file(Dir, 'train.tsv', TF), write_tsv(TF, Sets.train),
    dir_file(Dir, 'test.tsv', TsF), write_tsv(TsF, Sets.test),
    (   P.aleph == true -> write_aleph(Dir, Preds, Targets, Sets) ; true ),
    dir_file(Dir, 'log.txt', LF),
    setup_call_cleanup(open(LF, write, S),
        ( format(S, "RuDaS dataset generated by nesybench (Prolog generator)~n", []),
          dict_pairs(P, _, PP),
          forall(member(K-V, PP), format(S, "~w: ~q~n", [K, V])),
          forall(member(K-V0, [train-_, support-_, conseqs-_, test-_, eval_support-_, eval_conseqs-_]),
                 ( ignore(V0 = _), length(Sets.K, Len), format(S, "|~w|: ~d~n", [K, Len]) )) ),
        close(S)).

cmp_const(O, A, B) :-
    (   atom(A), atom(B), sub_atom(A, 1, _, 0, X), sub_atom(B, 1, _, 0, Y),
        atom_number(X, I), atom_number(Y, J), integer(I), integer(J)
    ->  compare(O0, I, J), ( O0 == (=) -> compare(O, A, B) ; O = O0 )
    ;   compare(O, A, B) ).

dir_file(Dir, File, Path) :- atomic_list_concat([Dir, '/', File], Path).

%!  write_rules(+File, +Rules) is det.
%
%   One rule per line: `p5(X0,X1) :- p6(X2,X0),p7(X2,X1).`
write_rules(File, Rules) :-
    write_lines(File, Rules, rule_string).

%!  rule_string(+Rule, -String) is det.
rule_string(Rule, String) :-
    copy_term(Rule, rule(H, B)),
    term_variables(H-B, Vs),
    foldl([V, I0, I]>>( format(atom(N), "X~d", [I0]), V = '$VAR'(N), I is I0 + 1 ), Vs, 0, _),
    Opts = [quoted(true), numbervars(true)],
    (   B == []
    ->  format(string(String), "~W.", [H, Opts])
    ;   maplist(atom_string_opts(Opts), B, Ss),
        atomic_list_concat(Ss, ',', BS),
        format(string(String), "~W :- ~w.", [H, Opts, BS])
    ).

%!  write_facts(+File, +Facts) is det.
write_facts(File, Facts) :-
    setup_call_cleanup(open(File, write, S, [encoding(utf8)]),
                       forall(member(F, Facts), format(S, "~q.~n", [F])),
                       close(S)).

write_lines(File, Items, Fmt) :-
    setup_call_cleanup(open(File, write, S, [encoding(utf8)]),
                       forall(member(I, Items), ( call(Fmt, I, L), format(S, "~s~n", [L]) )),
                       close(S)).

write_tsv(File, Facts) :-
    setup_call_cleanup(open(File, write, S, [encoding(utf8)]),
                       forall(( member(F, Facts), F =.. [P, A, B] ),
                              format(S, "~w\t~w\t~w~n", [A, P, B])),
                       close(S)).

%   Aleph: one .b/.f/.n triple per target predicate, loadable with read_all/1.
write_aleph(Dir, Preds, Targets, Sets) :-
    dir_file(Dir, aleph, AD),
    make_directory(AD),
    forall(member(TN/TA, Targets),
           write_aleph_target(AD, Preds, TN/TA, Sets)).

write_aleph_target(AD, Preds, TN/TA, Sets) :-
    include(has_functor(TN, TA), Sets.train, Pos),
    exclude(has_functor(TN, TA), Sets.train, BG),
    atomic_list_concat([AD, '/', TN], Base),
    atom_concat(Base, '.b', BF), atom_concat(Base, '.f', FF), atom_concat(Base, '.n', NF),
    setup_call_cleanup(open(BF, write, S),
        ( format(S, "% Aleph background for target ~w/~w (nesybench RuDaS). Use: read_all('~w'), induce.~n", [TN, TA, TN]),
          format(S, ":- set(i, 3).~n:- set(clauselength, 4).~n:- set(minpos, 2).~n:- set(noise, 5).~n", []),
          mode_atom(TN, TA, head, MH), format(S, ":- modeh(1, ~q).~n", [MH]),
          forall(( member(N/A, Preds), N/A \== TN/TA ),
                 ( mode_atom(N, A, in_out, M1), format(S, ":- modeb(*, ~q).~n", [M1]),
                   ( A >= 2 -> mode_atom(N, A, out_in, M2), format(S, ":- modeb(*, ~q).~n", [M2]) ; true ),
                   format(S, ":- determination(~q/~d, ~q/~d).~n", [TN, TA, N, A]) )),
          forall(member(F, BG), format(S, "~q.~n", [F])) ),
        close(S)),
    write_facts(FF, Pos),
    % negatives under the closed-world reading of D: atoms on the target that are not in D
    length(Pos, NPos),
    findall(C, ( member(F, Sets.cw), arg(_, F, C) ), Cs0), sort(Cs0, Cs),
    Consts =.. [consts|Cs],
    ( Cs == [] -> Neg = [] ; neg_examples(NPos, TN/TA, Consts, Sets.cw, Neg) ),
    write_facts(NF, Neg).

neg_examples(N, TN/TA, Consts, CW, Neg) :-
    catch(fresh_facts(N, [TN/TA], Consts, CW, Neg0), rudas_error(_), Neg0 = []),
    msort(Neg0, Neg).

mode_atom(N, A, Kind, M) :-
    length(Args, A),
    (   Kind == head -> maplist(=(+c), Args)
    ;   Kind == in_out -> Args = [+c|R], maplist(=(-c), R)
    ;   Args = [-c|R0], ( append(R1, [_], R0) -> true ; R1 = [] ), maplist(=(-c), R1),
        append([-c|R1], [+c], Args0), length(Args0, A), Args = Args0
    ),
    M =.. [N|Args].

% ---------------------------------------------------------------------------------------
% Summary for Python (manifest)

summary(P, graph(Comps, Nodes, Preds, Targets), _Rules, Sets, Summary) :-
    maplist([comp(I, Cat, D), _{id:I, category:Cat, depth:D}]>>true, Comps, CompDs),
    maplist(node_dict, Nodes, NodeDs),
    maplist([N/A, _{name:N, arity:A}]>>true, Preds, PredDs),
    maplist([N/A, S]>>format(string(S), "~w/~d", [N, A]), Targets, TargetSs),
    dict_pairs(Sets, _, SP),
    maplist([K-V, K-L]>>length(V, L), SP, CountPairs),
    dict_pairs(Counts, counts, CountPairs),
    Summary = _{params:P, components:CompDs, nodes:NodeDs, predicates:PredDs,
                targets:TargetSs, counts:Counts}.

node_dict(node(Id, C, L, Parent, Rule), _{id:Id, component:C, level:L, parent:Parent,
                                          rule:S, head:HP, body:BPs}) :-
    rule_string(Rule, S),
    Rule = rule(H, B),
    functor(H, HN, HA), format(string(HP), "~w/~d", [HN, HA]),
    maplist([A, Ps]>>( functor(A, N, Ar), format(string(Ps), "~w/~d", [N, Ar]) ), B, BPs).

% small helpers (closures for maplist/include)
shape_alt(P, Cat, L1, D, T, S1) :- shape_tree(P, Cat, L1, D, S1, T).
kid_head(N, A, node(_, _, _, _, rule(H, _))) :- functor(H, N, A).
inst_kid(P, Mode, Consts, Nodes, Atom, K, A0, A1) :-
    inst_node(P, Mode, Consts, Nodes, K, Atom, A0, A1).
in_list(L, X) :- memberchk(X, L).
atom_string_opts(Opts, A, S) :- format(string(S), "~W", [A, Opts]).
has_functor(N, A, F) :- functor(F, N, A).
