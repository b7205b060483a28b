:- module(rudas_metrics,
          [ evaluate/4,              % +DatasetDir, +LearnedFile, +Options:dict, -Result:dict
            evaluate_safe/5,         % +DatasetDir, +LearnedFile, +Options, -Result, -Error
            read_learned/4,          % +File, +Known:list, +Aux:list, -Outcome
            herbrand_metrics/5,      % +Original, +Learned, +Support, +Options, -Metrics:dict
            counts_metrics/3,        % +Counts:dict, +U, -Metrics:dict
            atom_distance/4,         % +Atom1, +Atom2, +Renaming, -D
            rule_distance/3,         % +Rule1, +Rule2, -D
            rule_distance/5,         % +Rule1, +Rule2, +Deadline, -D, -Complete
            rule_distance_brute/3,   % +Rule1, +Rule2, -D (test oracle)
            hungarian/3,             % +CostMatrix, +N, -MinCost
            r_score/3,               % +Original, +Learned, -Score
            r_score/5                % +Original, +Learned, +Options, -Score, -Partial
          ]).
/** <module> RuDaS evaluation measures (paper §5)

With I(R,F) the facts derived from F by R, excluding F (rudas_chase:chase/5):

  - Herbrand distance h_d = |I(R,F) Δ I(R',F)|
  - Herbrand accuracy h_r = 1 - h_d/u, with u the size of the Herbrand base of the original
    program: u = Σ_p |Const|^arity(p) over the *distinct* predicates p of R, F and I(R,F)
    (each counted once) and Const the constants of R, F and I(R,F). Predicates or constants
    that only the learned program produces are added to the signature, so that TN >= 0.
  - H-score = |I ∩ I'| / |I ∪ I'| (1 when both are empty)
  - TP = |I ∩ I'|, FP = |I' \ I| (derived but wrong), FN = |I \ I'| (missed),
    TN = u - |I ∪ I'|. This is the usual meaning; the paper's §5.2 text swaps the names of
    FP and FN. Accuracy, precision, recall, F1 as usual.
  - R-score (§5.3) = 1 - mean over r in R of min over r' in R' with the same head predicate
    of d_R(r, r') (1 when there is none). d_R minimises over injective variable renamings
    and over pairings of body atoms (the shorter body padded with placeholders, distance 1).
    d_A(a1, a2, ω) = 1 for different predicates/arities, else the number of argument
    positions that do not match under ω divided by 2·arity (1/4 per position for binary
    atoms, as in the paper). Constants match only the same constant. Computed by branch and
    bound over renamings with the best pairing per (partial) renaming as an assignment
    problem (Hungarian algorithm), not by trying every permutation: see rule_distance/5.
*/
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(pairs)).
:- use_module(library(ordsets)).
:- use_module(library(yall)).
:- use_module(library(aggregate)).
:- use_module(chase).
:- use_module(datalog, [datalog_rule_problem/2, source_stream/2, source_label/2,
                         source_text/2]).
:- use_module('../safe_load', [read_untrusted_term/4, with_time_limit/2]).
:- use_module('../progress').
:- use_module(messages, []).          % how rudas_input_error/4 prints

%!  evaluate_safe(+Dir, +Learned, +Options:dict, -Result:dict, -Error:dict) is det.
%
%   As evaluate/4; input errors bind Error to _{kind:, line:, message:} (else Error = none).
evaluate_safe(Dir, File, Options, Result, Error) :-
    catch(( evaluate(Dir, File, Options, Result), Error = none ),
          Caught,
          ( Result = _{}, input_error(Caught, File, Error) )).

%   input_error(+Caught, +LearnedFile, -Error:dict): the dict of evaluate_safe/5 for an input
%   error (of the learned file, or rudas_file_error/3 of any file the dataset holds).
input_error(rudas_input_error(Src, Kind, Line, Msg), _, _{kind:Kind, line:Line, message:Msg,
                                                        file:File}) :- !,
    source_label(Src, File).
input_error(rudas_file_error(F, Line, Msg), _, _{kind:bad_rule, line:Line, message:Msg,
                                                  file:F}) :- !.
input_error(Caught, _, _) :-
    throw(Caught).

%!  evaluate(+Dir, +Learned, +Options:dict, -Result:dict) is det.
%
%   Evaluate the learned rules Learned (a source of rudas_datalog: `_{label:, text:}` or a
%   file name) on the dataset Dir: a dict of sources `_{rules:, support:, train:,
%   relations:}` (train and relations may be left out; what Python hands over, every file read
%   through nesybench's door) or a folder name (rules.txt, eval-support.txt, train.txt,
%   relations.txt; for use from Prolog). Options: threshold (confidence, default 0), aux
%   (list of predicate names to ignore), max_derived (default 5000000), time_limit (seconds,
%   default 600).
evaluate(Dir, File, Options, Result) :-
    dataset_source(Dir, rules, 'rules.txt', RF), dataset_source(Dir, support, 'eval-support.txt', SF),
    read_rules(RF, Orig),
    read_facts(SF, Support),
    opt(Options, threshold, 0, Th),
    opt(Options, aux, [], Aux0), maplist(to_atom, Aux0, Aux),
    known_preds(Orig, Support, Dir, Known),
    read_learned(File, Known, Aux, Outcome),
    (   Outcome = ok(Learned0) -> true
    ;   Outcome = error(Kind, Line, Msg), throw(rudas_input_error(File, Kind, Line, Msg))
    ),
    include(above(Th), Learned0, Kept),
    pairs_values(Kept, Learned),
    length(Learned0, NAll), length(Learned, NKept),
    learned_auxiliaries(Learned0, Known, AutoAux),
    opt(Options, max_derived, 5000000, Max),
    opt(Options, time_limit, 600, TL),
    get_time(T0),
    herbrand_metrics(Orig, Learned, Support,
                     _{aux:Aux, aux_pis:AutoAux, max_derived:Max, time_limit:TL}, HM),
    %   R-score gets what is left of the time budget (at least 1 s): on time-out it is the
    %   best bound found so far (a lower bound on the true R-score) and r_score_partial is true.
    get_time(T1),
    (   TL == inf -> RTL = inf ; RTL is max(1.0, TL - (T1 - T0)) ),
    r_score(Orig, Learned, _{time_limit:RTL}, RS, RPartial),
    maplist([N/A, S]>>format(string(S), "~w/~w", [N, A]), AutoAux, AuxS),
    Result = HM.put(_{r_score:RS, r_score_partial:RPartial, rules_learned:NAll,
                      rules_used:NKept, auxiliary:AuxS}).

%!  learned_auxiliaries(+Learned:list, +Known:list, -Aux:list) is det.
%
%   Name/Arity of the predicates the learned rules define that are not predicates of the
%   dataset (paper §6: auxiliary predicates; their facts are left out of the metrics).
learned_auxiliaries(Learned, Known, Aux) :-
    findall(N/A, ( member(_-rule(H, _), Learned), functor(H, N, A),
                   \+ memberchk(N/A, Known), \+ memberchk(name(N), Known) ), Aux0),
    sort(Aux0, Aux).

to_atom(X, A) :- ( atom(X) -> A = X ; atom_string(A, X) ).
opt(D, K, Def, V) :- ( get_dict(K, D, V0), V0 \== null -> V = V0 ; V = Def ).
above(Th, C-_) :- C >= Th.
dir_file(Dir, File, Path) :- atomic_list_concat([Dir, '/', File], Path).

%   dataset_source(+Dir, +Key, +Name, -Source) is semidet: the source Key of a dataset dict
%   (fails when it is `none` or missing), or the file Name of the folder Dir (fails when an
%   optional file is missing: train.txt, relations.txt).
dataset_source(Dir, Key, _, Source) :-
    is_dict(Dir), !,
    get_dict(Key, Dir, Source),
    Source \== none.
dataset_source(Dir, Key, Name, Path) :-
    dir_file(Dir, Name, Path),
    (   memberchk(Key, [train, relations]) -> exists_file(Path) ; true ).

known_preds(Orig, Support, Dir, Known) :-
    findall(N/A, ( member(rule(H, B), Orig), member(X, [H|B]), functor(X, N, A) ), K1),
    findall(N/A, ( member(F, Support), functor(F, N, A) ), K2),
    (   dataset_source(Dir, train, 'train.txt', TF)
    ->  read_facts(TF, Tr), findall(N/A, ( member(F, Tr), functor(F, N, A) ), K3)
    ;   K3 = [] ),
    append([K1, K2, K3], K0), sort(K0, Known0),
    %   relations.txt lists the signature by name, including predicates that occur in no
    %   other file (the generator draws n_predicates names, not all of them used): a learned
    %   rule may use those with any arity (name(N) entries); a name that does occur keeps its
    %   arity.
    (   dataset_source(Dir, relations, 'relations.txt', RelF)
    ->  source_text(RelF, RelS),
        split_string(RelS, "\n", " \t\r", Lines),
        findall(name(N), ( member(L, Lines), L \== "", atom_string(N, L),
                           \+ memberchk(N/_, Known0) ), Ns)
    ;   Ns = [] ),
    append(Known0, Ns, Known).

known_pred(Known, N/A) :- ( memberchk(N/A, Known) -> true ; memberchk(name(N), Known) ).

%!  read_learned(+Source, +Known:list, +Aux:list, -Outcome) is det.
%
%   Read learned rules, one clause per term, optionally `Conf::Rule` (or `Conf :: Head :- Body`).
%   Outcome is ok(Conf-Rule list) or error(Kind, Line, Message) with Kind one of
%   syntax_error, unsafe, unknown_predicate, bad_rule, no_file.
read_learned(File, Known, Aux, Outcome) :-
    forall(recorded('$rudas_clause_text', _, Ref), erase(Ref)),
    (   \+ is_dict(File), \+ exists_file(File)
    ->  Outcome = error(no_file, 0, "file not found")
    ;   setup_call_cleanup(source_stream(File, S),
                           catch(read_clauses(S, Cls), E, true),
                           close(S)),
        (   nonvar(E)
        ->  syntax_outcome(E, Outcome)
        ;   check_learned(Cls, Known, Aux, Outcome)
        )
    ).

:- op(700, xfx, ::).

read_clauses(S, Cls) :-
    read_untrusted_term(S, T, Line, [module(rudas_metrics), variable_names(Names)]),
    (   T == end_of_file -> Cls = []
    ;   nb_setval('$rudas_names', Names),
        copy_term(T/Names, T2/N2), maplist(bind_name, N2), format(string(Txt), "~W", [T2, [quoted(true), numbervars(true)]]),
        recorda('$rudas_clause_text', Line-Txt),
        Cls = [Line-T|Rest], read_clauses(S, Rest)
    ).

syntax_outcome(error(syntax_error(What), Ctx), error(syntax_error, Line, Msg)) :- !,
    ( ( Ctx = stream(_, Line, _, _) ; Ctx = file(_, Line, _, _) ) -> true ; Line = 0 ),
    format(string(Msg), "syntax error: ~w", [What]).
syntax_outcome(untrusted_term_error(Line, Msg), error(bad_rule, Line, Msg)) :- !.
syntax_outcome(E, error(syntax_error, 0, Msg)) :- message_to_codes(E, Msg).

message_to_codes(E, Msg) :- format(string(Msg), "~q", [E]).

bind_name(N = V) :- ( var(V) -> V = '$VAR'(N) ; true ).

clause_text(Line, T, Txt) :-
    (   recorded('$rudas_clause_text', Line-Txt0) -> Txt = Txt0 ; format(string(Txt), "~q", [T]) ).

%   Every predicate that a learned clause defines (its head) is accepted in every body, in
%   any order of the clauses: learned auxiliary predicates (predicate invention, e.g.
%   `inv_p2(X,Y) :- p2(Y,X).`) need no --aux. Which of them are auxiliaries (defined by the
%   learned file but not a predicate of the dataset) is decided by learned_auxiliaries/3.
check_learned(Cls, Known, Aux, Outcome) :-
    findall(N/A, ( member(_-T, Cls), learned_rule(T, _, rule(H, _), ok), functor(H, N, A) ),
            Defined),
    append(Known, Defined, Known1),
    check_learned_(Cls, Known1, Aux, Outcome).

check_learned_([], _, _, ok([])).
check_learned_([Line-T|Ts], Known, Aux, Outcome) :-
    (   learned_rule(T, Conf, Rule, Why)
    ->  (   Why \== ok
        ->  Outcome = error(bad_rule, Line, Why)
        ;   Rule = rule(H, B),
            term_variables(H, HVs), term_variables(B, BVs),
            (   member(V, HVs), \+ ( member(W, BVs), W == V )
            ->  clause_text(Line, T, Txt),
                format(string(M), "unsafe rule: a head variable does not occur in the body of ~w", [Txt]),
                Outcome = error(unsafe, Line, M)
            ;   findall(N/A, ( member(X, [H|B]), functor(X, N, A) ), PIs),
                member(N/A, PIs), \+ known_pred(Known, N/A), \+ memberchk(N, Aux)
            ->  format(string(M), "unknown predicate ~w/~w (not in the dataset and defined by no learned rule)", [N, A]),
                Outcome = error(unknown_predicate, Line, M)
            ;   check_learned_(Ts, Known, Aux, O1),
                (   O1 = ok(Rs) -> Outcome = ok([Conf-Rule|Rs]) ; Outcome = O1 )
            )
        )
    ;   format(string(M), "not a rule: ~q", [T]),
        Outcome = error(bad_rule, Line, M)
    ).

learned_rule((:- _), _, _, "directives (:- ...) are not allowed in a rules file") :- !.
learned_rule(C::R, Conf, Rule, Why) :- !,
    (   number(C) -> Conf = C, learned_rule(R, _, Rule, Why)
    ;   Why = "confidence must be a number (Conf::Rule)"
    ).
learned_rule((C::H) :- B, Conf, Rule, Why) :- !, learned_rule(C::(H :- B), Conf, Rule, Why).
learned_rule(T, 1.0, rule(H, B), Why) :-
    (   datalog_rule_problem(T, Why0)           % shared with rudas chase (datalog.pl)
    ->  Why = Why0
    ;   rule_term(rule(H, B), T),
        Why = ok
    ).

%!  herbrand_metrics(+Original, +Learned, +Support, +Options:dict, -Metrics:dict) is det.
%
%   Options: aux (predicate names whose facts are ignored), max_derived, time_limit.
herbrand_metrics(Orig, Learned, Support, Options, M) :-
    chase(Orig, Support, I, _, [progress('chasing original rules')]),
    opt(Options, max_derived, inf, Max), opt(Options, time_limit, inf, TL),
    chase(Learned, Support, I1, Status, [max_derived(Max), time_limit(TL),
                                         progress('chasing learned rules')]),
    opt(Options, aux, [], Aux), opt(Options, aux_pis, [], AuxPIs),
    exclude(aux_fact(Aux, AuxPIs), I1, I2),
    sort(I, IS), sort(I2, IS2),
    ord_intersection(IS, IS2, TPs), ord_union(IS, IS2, Us),
    ord_subtract(IS2, IS, FPs), ord_subtract(IS, IS2, FNs),
    length(TPs, TP), length(FPs, FP), length(FNs, FN), length(Us, NU),
    herbrand_base_size(Orig, Support, IS, IS2, U),
    TN is U - NU,
    counts_metrics(_{tp:TP, fp:FP, fn:FN, tn:TN}, U, M0),
    length(IS, NI), length(IS2, NI2),
    ( Status == complete -> Partial = false, Reason = "" ; Partial = true, term_string(Status, Reason) ),
    M = M0.put(_{herbrand_base:U, n_original:NI, n_learned:NI2, partial:Partial, budget:Reason}).

aux_fact(Aux, AuxPIs, F) :- functor(F, N, A), ( memberchk(N, Aux) -> true ; memberchk(N/A, AuxPIs) ).

%!  counts_metrics(+Counts:dict, +U:integer, -Metrics:dict) is det.
%
%   Counts has tp, fp, fn, tn (standard meaning). Metrics: herbrand_distance, herbrand_accuracy,
%   h_score, accuracy, precision, recall, f1 and the counts.
counts_metrics(C, U, M) :-
    TP = C.tp, FP = C.fp, FN = C.fn, TN = C.tn,
    HD is FP + FN,
    ( U > 0 -> HA is 1 - HD / U, Acc is (TP + TN) / U ; HA = 1.0, Acc = 1.0 ),
    ( TP + FP + FN > 0 -> HS is TP / (TP + FP + FN) ; HS = 1.0 ),
    ( TP + FP > 0 -> P is TP / (TP + FP) ; ( FN =:= 0 -> P = 1.0 ; P = 0.0 ) ),
    ( TP + FN > 0 -> R is TP / (TP + FN) ; ( FP =:= 0 -> R = 1.0 ; R = 0.0 ) ),
    ( P + R > 0 -> F1 is 2 * P * R / (P + R) ; F1 = 0.0 ),
    M = _{tp:TP, fp:FP, fn:FN, tn:TN, herbrand_distance:HD, herbrand_accuracy:HA,
          h_score:HS, accuracy:Acc, precision:P, recall:R, f1:F1}.

%   u = Σ_p |Const|^arity(p), distinct predicates of R, F, I(R,F) (and of I(R',F) if new).
herbrand_base_size(Orig, Support, I, I1, U) :-
    findall(N/A, ( member(rule(H, B), Orig), member(X, [H|B]), functor(X, N, A) ), P1),
    findall(N/A, ( member(Fs, [Support, I, I1]), member(F, Fs), functor(F, N, A) ), P2),
    append(P1, P2, Ps0), sort(Ps0, Ps),
    findall(Cn, ( member(rule(H, B), Orig), member(X, [H|B]), arg(_, X, Cn), atomic(Cn) ), C1),
    findall(Cn, ( member(Fs, [Support, I, I1]), member(F, Fs), arg(_, F, Cn) ), C2),
    append(C1, C2, Cs0), sort(Cs0, Cs), length(Cs, NC),
    foldl(add_power(NC), Ps, 0, U).

add_power(NC, _/A, S0, S) :- S is S0 + NC ^ A.

% ---------------------------------------------------------------------------------------
% R-score

%!  atom_distance(+A1, +A2, +Renaming:list, -D:number) is det.
%
%   Renaming is a list of V1-V2 pairs (variables of the first rule to variables of the
%   second). `-` is the placeholder atom.
atom_distance(-, _, _, 1) :- !.
atom_distance(_, -, _, 1) :- !.
atom_distance(A1, A2, W, D) :-
    functor(A1, N, Ar), functor(A2, N2, Ar2),
    (   N/Ar \== N2/Ar2 -> D = 1
    ;   Ar =:= 0 -> D = 0
    ;   A1 =.. [_|X1], A2 =.. [_|X2],
        foldl(mismatch(W), X1, X2, 0, Mis),
        D is Mis / (2 * Ar)
    ).

mismatch(W, T1, T2, M0, M) :- ( term_match(W, T1, T2) -> M = M0 ; M is M0 + 1 ).

term_match(W, T1, T2) :-
    (   var(T1)
    ->  var(T2), member(V1-V2, W), V1 == T1, !, V2 == T2
    ;   nonvar(T2), T1 == T2
    ).

%   bounded_distance(+Rule1, +Rule2, +Deadline, -D, -Complete): rule_distance/5, stopped by
%   the watchdog at Deadline as well. rule_distance/5 checks the deadline between nodes of its
%   search, and one node (an assignment problem over two long bodies) can take seconds; when
%   the watchdog stops it, D is 1, the trivial upper bound, and Complete is false.
bounded_distance(R1, R2, inf, D, Complete) :- !,
    rule_distance(R1, R2, inf, D, Complete).
bounded_distance(R1, R2, Deadline, D, Complete) :-
    get_time(Now),
    Left is Deadline - Now,
    (   Left =< 0
    ->  D = 1, Complete = false
    ;   catch(with_time_limit(Left, rule_distance(R1, R2, Deadline, D, Complete)),
              time_limit_exceeded, ( D = 1, Complete = false ))
    ).

%!  rule_distance(+Rule1, +Rule2, -D:number) is det.
%
%   d_R of §5.3 for rule(Head, Body) terms; rules with different head predicates have
%   distance 1. Example 5.3 of the paper gives 0.5625. Exact; see rule_distance/5.
rule_distance(R1, R2, D) :- rule_distance(R1, R2, inf, D, _).

%!  rule_distance(+Rule1, +Rule2, +Deadline, -D:number, -Complete:boolean) is det.
%
%   d_R by branch and bound over the injective variable renamings (each variable of rule 1
%   to a distinct variable of rule 2 or to none), variables taken most frequent first. At
%   a node the partial renaming gives, for every pair of body atoms, a lower bound on their
%   d_A (positions that mismatch whatever the still-free variables become); the best body
%   pairing under these bounds is an assignment problem, solved exactly by the Hungarian
%   algorithm (hungarian/3, O(n^3)), and together with the head's bound it prunes the
%   subtree when it cannot beat the best complete renaming found so far. At a leaf the
%   bounds are exact, so the result equals rule_distance_brute/3 (tests cross-check them).
%   Deadline is a get_time/1 stamp or `inf`: past it the search stops with the best
%   renaming found so far (an upper bound on d_R) and Complete = false.
rule_distance(rule(H1, B1), rule(H2, B2), Deadline, D, Complete) :-
    copy_term(rule(H1, B1)-rule(H2, B2), rule(H1c, B1c)-rule(H2c, B2c)),
    functor(H1c, N1, A1), functor(H2c, N2, A2),
    (   N1/A1 \== N2/A2
    ->  D = 1, Complete = true
    ;   length(B1c, L1), length(B2c, L2), NA is max(L1, L2) + 1,
        pad(B1c, L2, P1), pad(B2c, L1, P2),
        term_variables(rule(H1c, B1c), V1s0),
        order_vars(V1s0, [H1c|B1c], V1s),
        term_variables(rule(H2c, B2c), V2s),
        Ctx = ctx(H1c, H2c, P1, P2, V2s, Deadline),
        maplist(unmatched, V1s, W0),
        node_bound(Ctx, W0, [], UBNone),       % every variable unmatched: exact, an upper bound
        heuristic_bound(Ctx, V1s, UBNone, UB0),
        nb_setval('$rd_best', UB0), nb_setval('$rd_partial', false),
        bb(V1s, [], [], Ctx),
        nb_getval('$rd_best', Best), nb_getval('$rd_partial', Partial),
        ( Partial == true -> Complete = false ; Complete = true ),
        D is Best / NA
    ).

unmatched(V, V-'$none').

%   Variables of rule 1, most occurrences first (ties: first occurrence first).
order_vars(Vs, Atoms, Sorted) :-
    maplist(occ_count(Atoms), Vs, Counts),
    pairs_keys_values(Pairs, Counts, Vs),
    length(Vs, N), length(Is, N), foldl(succ_index, Is, 1, _),
    maplist(neg_key, Pairs, Is, Keyed),
    keysort(Keyed, SortedK), pairs_values(SortedK, Sorted).

occ_count(Atoms, V, C) :-
    aggregate_all(count, ( member(At, Atoms), At \== (-), arg(_, At, X), X == V ), C).

neg_key(C-V, I, (NC-I)-V) :- NC is -C.
succ_index(I, I, I1) :- I1 is I + 1.

bb(Vars, W, Used, Ctx) :-
    node_bound(Ctx, W, Used, LB),
    nb_getval('$rd_best', Best),
    (   LB >= Best - 1.0e-9
    ->  true
    ;   Vars == []
    ->  nb_setval('$rd_best', LB)
    ;   Ctx = ctx(_, _, _, _, _, Deadline), Deadline \== inf, get_time(Now), Now > Deadline
    ->  nb_setval('$rd_partial', true)
    ;   Vars = [V|Vs],
        candidates(V, W, Used, Ctx, Cands),
        bb_children(Cands, V, Vs, W, Used, Ctx)
    ).

bb_children([], _, _, _, _, _).
bb_children([C|Cs], V, Vs, W, Used, Ctx) :-
    ( C == '$none' -> U1 = Used ; U1 = [C|Used] ),
    bb(Vs, [V-C|W], U1, Ctx),
    nb_getval('$rd_best', B),
    (   B =< 1.0e-12 -> true
    ;   nb_getval('$rd_partial', true) -> true
    ;   bb_children(Cs, V, Vs, W, Used, Ctx)
    ).

in_vars(Vs, T) :- member(U, Vs), U == T, !.

%   Free variables of rule 2 for V, those aligned with V most often first, then none.
candidates(V, _W, Used, ctx(H1, H2, P1, P2, V2s, _), Cands) :-
    exclude(in_vars(Used), V2s, Free),     % (findall/3 would copy the variables)
    maplist(affinity(V, [H1-H2], P1, P2), Free, Scores),
    pairs_keys_values(Pairs, Scores, Free),
    length(Free, N), length(Is, N), foldl(succ_index, Is, 1, _),
    maplist(neg_key, Pairs, Is, Keyed),
    keysort(Keyed, SK), pairs_values(SK, Ordered),
    append(Ordered, ['$none'], Cands).

affinity(V, HeadPair, P1, P2, T, Score) :-
    aggregate_all(count,
        ( ( member(A1-A2, HeadPair) ; member(A1, P1), member(A2, P2) ),
          A1 \== (-), A2 \== (-),
          functor(A1, N, Ar), functor(A2, N, Ar),
          arg(I, A1, X), X == V, arg(I, A2, Y), Y == T ),
        Score).

%   Lower bound of the cost (head + best pairing of the padded bodies) under the partial
%   renaming W (V1-T pairs, T a variable of rule 2 or '$none'; Used = the Ts taken).
node_bound(Ctx, W, Used, LB) :- node_bound(Ctx, W, Used, LB, _).

node_bound(ctx(H1, H2, P1, P2, _, _), W, Used, LB, Pairing) :-
    atom_bound(W, Used, H1, H2, DH),
    length(P1, N),
    findall(Row, ( member(A1, P1),
                   findall(C, ( member(A2, P2), atom_bound(W, Used, A1, A2, C) ), Cs),
                   Row =.. [r|Cs] ), Rows),
    M =.. [m|Rows],
    hungarian(M, N, DB, Pairing),
    LB is DH + DB.

%   A good first upper bound, so that branch and bound prunes from the start: alternate
%   (at most 4 rounds) between the best pairing for a renaming (Hungarian on the atom
%   costs) and the best renaming for a pairing (a maximum-weight matching of the variables,
%   weight = positions where the two variables face each other in the head or in paired
%   atoms; Hungarian again), starting from the pairing of the root's lower bound. Every
%   renaming it tries is a complete one, so each cost is exact.
heuristic_bound(Ctx, V1s, UB0, UB) :-
    node_bound(Ctx, [], [], _, Pairing),
    heuristic_rounds(4, Ctx, V1s, Pairing, UB0, UB).

heuristic_rounds(0, _, _, _, UB, UB) :- !.
heuristic_rounds(K, Ctx, V1s, Pairing, UB0, UB) :-
    best_renaming(Ctx, V1s, Pairing, W, Used),
    node_bound(Ctx, W, Used, Cost, Pairing1),
    (   Cost < UB0 - 1.0e-12
    ->  K1 is K - 1, heuristic_rounds(K1, Ctx, V1s, Pairing1, Cost, UB)
    ;   UB = UB0
    ).

best_renaming(ctx(H1, H2, P1, P2, V2s, _), V1s, Pairing, W, Used) :-
    findall(A1-A2, ( member(I-J, Pairing), nth1(I, P1, A1), nth1(J, P2, A2) ), Pairs0),
    Faced = [H1-H2|Pairs0],
    length(V1s, K1), length(V2s, K2), S is max(K1, K2),
    length(Rows, S),
    foldl(weight_row(Faced, V2s, S), Rows, V1sPadded, _),
    pad_vars(V1s, S, V1sPadded),
    M =.. [m|Rows],
    hungarian(M, S, _, Match),
    foldl(renaming_pair(V1s, V2s, M), Match, [], W0),
    reverse(W0, W1),
    include(mapped_pair, W1, Mapped), pairs_values(Mapped, Used),
    maplist(fill_none(W1), V1s, W).

pad_vars(Vs, S, Padded) :-
    length(Vs, K), E is S - K, length(Ex, E), maplist(=('$pad'), Ex), append(Vs, Ex, Padded).

weight_row(Faced, V2s, S, Row, V, _) :-
    length(V2s, K2), E is S - K2, length(Ex, E), maplist(=(0), Ex),
    maplist(neg_faced(Faced, V), V2s, Ws), append(Ws, Ex, Cs),
    Row =.. [r|Cs].

neg_faced(_, V, _, 0) :- V == '$pad', !.
neg_faced(Faced, V, T, C) :-
    aggregate_all(count, ( member(A1-A2, Faced), A1 \== (-), A2 \== (-),
                           functor(A1, N, Ar), functor(A2, N, Ar),
                           arg(I, A1, X), X == V, arg(I, A2, Y), Y == T ), Cnt),
    C is -Cnt.

renaming_pair(V1s, V2s, M, I-J, W0, W) :-
    length(V1s, K1), length(V2s, K2),
    (   I =< K1, J =< K2, cost(M, I, J, C), C < 0
    ->  nth1(I, V1s, V), nth1(J, V2s, T), W = [V-T|W0]
    ;   W = W0
    ).

mapped_pair(_-T) :- T \== '$none'.

fill_none(W, V, V-T) :- ( member(X-T0, W), X == V -> T = T0 ; T = '$none' ).

atom_bound(_, _, -, _, 1) :- !.
atom_bound(_, _, _, -, 1) :- !.
atom_bound(W, Used, A1, A2, D) :-
    functor(A1, N, Ar), functor(A2, N2, Ar2),
    (   N/Ar \== N2/Ar2 -> D = 1
    ;   Ar =:= 0 -> D = 0
    ;   A1 =.. [_|X1], A2 =.. [_|X2],
        foldl(pos_bound(W, Used), X1, X2, 0, Mis),
        D is Mis / (2 * Ar)
    ).

pos_bound(W, Used, T1, T2, M0, M) :-
    (   var(T1)
    ->  (   member(V-X, W), V == T1
        ->  ( X \== '$none', var(T2), X == T2 -> M = M0 ; M is M0 + 1 )
        ;   ( var(T2), \+ ( member(U, Used), U == T2 ) -> M = M0 ; M is M0 + 1 )
        )
    ;   ( nonvar(T2), T1 == T2 -> M = M0 ; M is M0 + 1 )
    ).

%!  hungarian(+Cost, +N:integer, -Min:number) is det.
%
%   Minimum total cost of a perfect matching of the N x N matrix Cost = m(r(C11, ..., C1N),
%   ...) (Kuhn-Munkres with potentials, O(N^3)); 0 for N = 0.
hungarian(A, N, Min) :- hungarian(A, N, Min, _).

%!  hungarian(+Cost, +N:integer, -Min:number, -Assignment:list) is det.
%
%   As hungarian/3; Assignment is the optimal matching as Row-Column pairs (1-based).
hungarian(_, 0, 0, []) :- !.
hungarian(A, N, Min, Assignment) :-
    N1 is N + 1,
    functor(U, u, N1), fill(U, 0), functor(V, v, N1), fill(V, 0),
    functor(P, p, N1), fill(P, 0), functor(Way, w, N1), fill(Way, 0),
    forall(between(1, N, I), hung_row(A, N, U, V, P, Way, I)),
    aget(V, 0, V0), Min is -V0,
    findall(I-J, ( between(1, N, J), aget(P, J, I) ), Assignment0),
    msort(Assignment0, Assignment).

fill(T, X) :- functor(T, _, K), forall(between(1, K, I), nb_setarg(I, T, X)).
aget(T, I, X) :- I1 is I + 1, arg(I1, T, X).
aset(T, I, X) :- I1 is I + 1, nb_setarg(I1, T, X).
cost(A, I, J, C) :- arg(I, A, Row), arg(J, Row, C).

hung_row(A, N, U, V, P, Way, I) :-
    aset(P, 0, I),
    N1 is N + 1,
    functor(MinV, mv, N1), fill(MinV, 1.0e300),
    functor(UsedC, uc, N1), fill(UsedC, false),
    hung_loop(A, N, U, V, P, Way, MinV, UsedC, 0, JEnd),
    hung_augment(P, Way, JEnd).

hung_loop(A, N, U, V, P, Way, MinV, UsedC, J0, JEnd) :-
    aset(UsedC, J0, true),
    aget(P, J0, I0), aget(U, I0, UI0),
    hung_scan(1, N, A, I0, UI0, V, Way, MinV, UsedC, J0, 1.0e300, 0, Delta, J1),
    forall(between(0, N, J),
           (   aget(UsedC, J, true)
           ->  aget(P, J, PJ), aget(U, PJ, UPJ), UPJ1 is UPJ + Delta, aset(U, PJ, UPJ1),
               aget(V, J, VJ), VJ1 is VJ - Delta, aset(V, J, VJ1)
           ;   aget(MinV, J, MJ), MJ1 is MJ - Delta, aset(MinV, J, MJ1)
           )),
    aget(P, J1, PJ1),
    (   PJ1 =:= 0 -> JEnd = J1
    ;   hung_loop(A, N, U, V, P, Way, MinV, UsedC, J1, JEnd)
    ).

hung_scan(J, N, _, _, _, _, _, _, _, _, D, J1, D, J1) :- J > N, !.
hung_scan(J, N, A, I0, UI0, V, Way, MinV, UsedC, J0, D0, J10, D, J1) :-
    (   aget(UsedC, J, false)
    ->  cost(A, I0, J, C), aget(V, J, VJ), Cur is C - UI0 - VJ,
        aget(MinV, J, MJ),
        ( Cur < MJ -> aset(MinV, J, Cur), aset(Way, J, J0), MJ1 = Cur ; MJ1 = MJ ),
        ( MJ1 < D0 -> D1 = MJ1, J11 = J ; D1 = D0, J11 = J10 )
    ;   D1 = D0, J11 = J10
    ),
    Jn is J + 1,
    hung_scan(Jn, N, A, I0, UI0, V, Way, MinV, UsedC, J0, D1, J11, D, J1).

hung_augment(P, Way, J0) :-
    aget(Way, J0, J1), aget(P, J1, PJ1), aset(P, J0, PJ1),
    ( J1 =:= 0 -> true ; hung_augment(P, Way, J1) ).

%!  rule_distance_brute(+Rule1, +Rule2, -D:number) is det.
%
%   The definition of d_R taken literally: every injective renaming x every permutation of
%   the padded second body. Factorial in the body length; the test oracle for
%   rule_distance/3 on small rules.
rule_distance_brute(rule(H1, B1), rule(H2, B2), D) :-
    copy_term(rule(H1, B1)-rule(H2, B2), rule(H1c, B1c)-rule(H2c, B2c)),
    functor(H1c, N1, A1), functor(H2c, N2, A2),
    (   N1/A1 \== N2/A2 -> D = 1
    ;   length(B1c, L1), length(B2c, L2), NA is max(L1, L2) + 1,
        pad(B1c, L2, P1), pad(B2c, L1, P2),
        term_variables(rule(H1c, B1c), V1s), term_variables(rule(H2c, B2c), V2s),
        aggregate_all(min(S), ( renaming(V1s, V2s, W),
                                atom_distance(H1c, H2c, W, DH),
                                best_pairing(P1, P2, W, DB),
                                S is DH + DB ), Best),
        D is Best / NA
    ).

pad(B, Other, P) :- length(B, L), ( L >= Other -> P = B ; K is Other - L, length(Ph, K), maplist(=(-), Ph), append(B, Ph, P) ).

renaming([], _, []).
renaming([V|Vs], Avail, W) :-
    (   select(T, Avail, Rest), W = [V-T|W1], renaming(Vs, Rest, W1)
    ;   renaming(Vs, Avail, W)
    ).

best_pairing(P1, P2, W, D) :-
    aggregate_all(min(S), ( permutation(P2, Perm), foldl(pair_cost(W), P1, Perm, 0, S) ), D).

pair_cost(W, A1, A2, S0, S) :- atom_distance(A1, A2, W, D), S is S0 + D.

%!  r_score(+Original:list, +Learned:list, -Score:number) is det.
%
%   R-score = 1 - (1/|R|) Σ_{r ∈ R} min_{r' ∈ R'[hp(r)]} d_R(r, r'); a rule of R without a
%   learned rule for its head predicate contributes 1. 1 when R is empty.
r_score(Orig, Learned, Score) :- r_score(Orig, Learned, _{}, Score, _).

%!  r_score(+Original, +Learned, +Options:dict, -Score, -Partial:boolean) is det.
%
%   Options: time_limit (seconds, default inf) for the whole score. When it runs out, the
%   remaining distances are the best found so far (upper bounds), so Score is a lower bound
%   of the R-score, and Partial = true.
r_score([], _, _, 1.0, false) :- !.
r_score(Orig, Learned, Options, Score, Partial) :-
    opt(Options, time_limit, inf, TL),
    ( TL == inf -> Deadline = inf ; get_time(T0), Deadline is T0 + TL ),
    length(Orig, N),
    progress('R-score', 0, N),
    foldl(best_match(Learned, Deadline, N), Orig, 0-true-0, Sum-Complete-_),
    Score is 1 - Sum / N,
    ( Complete == true -> Partial = false ; Partial = true ).

%   best_match/6: best_match/5 with a count of the rules scored, reported as progress.
best_match(Learned, Deadline, N, R, S0-C0-I0, S-C-I) :-
    best_match(Learned, Deadline, R, S0-C0, S-C),
    I is I0 + 1,
    progress('R-score', I, N).

best_match(Learned, Deadline, R, S0-C0, S-C) :-
    R = rule(H, _), functor(H, N, A),
    findall(D-Cm, ( member(L, Learned), L = rule(H2, _), functor(H2, N, A),
                    bounded_distance(R, L, Deadline, D, Cm) ), DCs),
    (   DCs == [] -> Min = 1, C1 = true
    ;   pairs_keys(DCs, Ds), min_list(Ds, Min),
        ( memberchk(_-false, DCs) -> C1 = false ; C1 = true )
    ),
    S is S0 + Min,
    ( C0 == true, C1 == true -> C = true ; C = false ).
