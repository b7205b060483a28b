:- module(rudas_metrics,
          [ evaluate/4,              % +DatasetDir, +LearnedFile, +Options:dict, -Result:dict
            evaluate_safe/5,         % +DatasetDir, +LearnedFile, +Options, -Result, -Error
            read_learned/4,          % +File, +Known:list, +Aux:list, -Outcome
            herbrand_metrics/5,      % +Original, +Learned, +Support, +Options, -Metrics:dict
            counts_metrics/3,        % +Counts:dict, +U, -Metrics:dict
            atom_distance/4,         % +Atom1, +Atom2, +Renaming, -D
            rule_distance/3,         % +Rule1, +Rule2, -D
            r_score/3                % +Original, +Learned, -Score
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
    atoms, as in the paper). Constants match only the same constant.
*/
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(pairs)).
:- use_module(library(ordsets)).
:- use_module(chase).

%!  evaluate_safe(+Dir, +LearnedFile, +Options:dict, -Result:dict, -Error:dict) is det.
%
%   As evaluate/4; input errors bind Error to _{kind:, line:, message:} (else Error = none).
evaluate_safe(Dir, File, Options, Result, Error) :-
    catch(( evaluate(Dir, File, Options, Result), Error = none ),
          rudas_input_error(Kind, Line, Msg),
          ( Result = _{}, Error = _{kind:Kind, line:Line, message:Msg} )).

%!  evaluate(+Dir, +LearnedFile, +Options:dict, -Result:dict) is det.
%
%   Evaluate the learned rules in LearnedFile on the dataset in Dir (rules.txt,
%   eval-support.txt). Options: threshold (confidence, default 0), aux (list of predicate
%   names to ignore), max_derived (default 5000000), time_limit (seconds, default 600).
evaluate(Dir, File, Options, Result) :-
    dir_file(Dir, 'rules.txt', RF), dir_file(Dir, 'eval-support.txt', SF),
    read_rules(RF, Orig),
    read_facts(SF, Support),
    opt(Options, threshold, 0, Th),
    opt(Options, aux, [], Aux0), maplist(to_atom, Aux0, Aux),
    known_preds(Orig, Support, Dir, Known),
    read_learned(File, Known, Aux, Outcome),
    (   Outcome = ok(Learned0) -> true
    ;   Outcome = error(Kind, Line, Msg), throw(rudas_input_error(Kind, Line, Msg))
    ),
    include(above(Th), Learned0, Kept),
    pairs_values(Kept, Learned),
    length(Learned0, NAll), length(Learned, NKept),
    opt(Options, max_derived, 5000000, Max),
    opt(Options, time_limit, 600, TL),
    herbrand_metrics(Orig, Learned, Support, _{aux:Aux, max_derived:Max, time_limit:TL}, HM),
    r_score(Orig, Learned, RS),
    Result = HM.put(_{r_score:RS, rules_learned:NAll, rules_used:NKept}).

to_atom(X, A) :- ( atom(X) -> A = X ; atom_string(A, X) ).
opt(D, K, Def, V) :- ( get_dict(K, D, V0), V0 \== null -> V = V0 ; V = Def ).
above(Th, C-_) :- C >= Th.
dir_file(Dir, File, Path) :- atomic_list_concat([Dir, '/', File], Path).

known_preds(Orig, Support, Dir, Known) :-
    findall(N/A, ( member(rule(H, B), Orig), member(X, [H|B]), functor(X, N, A) ), K1),
    findall(N/A, ( member(F, Support), functor(F, N, A) ), K2),
    dir_file(Dir, 'train.txt', TF),
    (   exists_file(TF) -> read_facts(TF, Tr), findall(N/A, ( member(F, Tr), functor(F, N, A) ), K3)
    ;   K3 = [] ),
    dir_file(Dir, 'relations.txt', RelF),
    (   exists_file(RelF) -> true ; true ),
    append([K1, K2, K3], K0), sort(K0, Known).

%!  read_learned(+File, +Known:list, +Aux:list, -Outcome) is det.
%
%   Read learned rules, one clause per term, optionally `Conf::Rule` (or `Conf :: Head :- Body`).
%   Outcome is ok(Conf-Rule list) or error(Kind, Line, Message) with Kind one of
%   syntax_error, unsafe, unknown_predicate, bad_rule, no_file.
read_learned(File, Known, Aux, Outcome) :-
    forall(recorded('$rudas_clause_text', _, Ref), erase(Ref)),
    (   \+ exists_file(File)
    ->  Outcome = error(no_file, 0, "file not found")
    ;   setup_call_cleanup(open(File, read, S),
                           catch(read_clauses(S, Cls), E, true),
                           close(S)),
        (   nonvar(E)
        ->  syntax_outcome(E, Outcome)
        ;   check_learned(Cls, Known, Aux, Outcome)
        )
    ).

:- op(700, xfx, ::).

read_clauses(S, Cls) :-
    read_term(S, T, [syntax_errors(error), term_position(Pos), module(rudas_metrics),
                     variable_names(Names)]),
    (   T == end_of_file -> Cls = []
    ;   stream_position_data(line_count, Pos, Line),
        nb_setval('$rudas_names', Names),
        copy_term(T/Names, T2/N2), maplist(bind_name, N2), format(string(Txt), "~W", [T2, [quoted(true), numbervars(true)]]),
        recorda('$rudas_clause_text', Line-Txt),
        Cls = [Line-T|Rest], read_clauses(S, Rest)
    ).

syntax_outcome(error(syntax_error(What), Ctx), error(syntax_error, Line, Msg)) :- !,
    ( ( Ctx = stream(_, Line, _, _) ; Ctx = file(_, Line, _, _) ) -> true ; Line = 0 ),
    format(string(Msg), "syntax error: ~w", [What]).
syntax_outcome(E, error(syntax_error, 0, Msg)) :- message_to_codes(E, Msg).

message_to_codes(E, Msg) :- format(string(Msg), "~q", [E]).

bind_name(N = V) :- ( var(V) -> V = '$VAR'(N) ; true ).

clause_text(Line, T, Txt) :-
    (   recorded('$rudas_clause_text', Line-Txt0) -> Txt = Txt0 ; format(string(Txt), "~q", [T]) ).

check_learned([], _, _, ok([])).
check_learned([Line-T|Ts], Known, Aux, Outcome) :-
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
                member(N/A, PIs), \+ memberchk(N/A, Known), \+ memberchk(N, Aux),
                \+ ( member(_-T2, Ts), learned_rule(T2, _, rule(H2, _), _), functor(H2, N, A) ),
                \+ ( functor(H, N, A), fail )
            ->  format(string(M), "unknown predicate ~w/~w (not in the dataset; list auxiliary predicates with --aux)", [N, A]),
                Outcome = error(unknown_predicate, Line, M)
            ;   check_learned(Ts, Known, Aux, O1),
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
    rule_term(rule(H, B), T),
    (   \+ callable(H) -> Why = "a rule head must be an atom"
    ;   member(A, B), \+ callable(A) -> Why = "body literals must be atoms"
    ;   member(A, B), A = (\+ _) -> Why = "negation is not supported (datalog rules only)"
    ;   ( H =.. [_|Args], member(X, Args), compound(X) ) -> Why = "function terms are not allowed (datalog)"
    ;   Why = ok
    ).

%!  herbrand_metrics(+Original, +Learned, +Support, +Options:dict, -Metrics:dict) is det.
%
%   Options: aux (predicate names whose facts are ignored), max_derived, time_limit.
herbrand_metrics(Orig, Learned, Support, Options, M) :-
    chase(Orig, Support, I, _, []),
    opt(Options, max_derived, inf, Max), opt(Options, time_limit, inf, TL),
    chase(Learned, Support, I1, Status, [max_derived(Max), time_limit(TL)]),
    opt(Options, aux, [], Aux),
    exclude(aux_fact(Aux), I1, I2),
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

aux_fact(Aux, F) :- functor(F, N, _), memberchk(N, Aux).

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

%!  rule_distance(+Rule1, +Rule2, -D:number) is det.
%
%   d_R of §5.3 for rule(Head, Body) terms; rules with different head predicates have
%   distance 1. Example 5.3 of the paper gives 0.5625.
rule_distance(rule(H1, B1), rule(H2, B2), D) :-
    copy_term(rule(H1, B1)-rule(H2, B2), rule(H1c, B1c)-rule(H2c, B2c)),
    functor(H1c, N1, A1), functor(H2c, N2, A2),
    (   N1/A1 \== N2/A2 -> D = 1
    ;   length(B1c, L1), length(B2c, L2), NA is max(L1, L2) + 1,
        pad(B1c, L2, P1), pad(B2c, L1, P2),
        term_variables(rule(H1c, B1c), V1s), term_variables(rule(H2c, B2c), V2s),
        aggregate_min_renaming(V1s, V2s, H1c, H2c, P1, P2, Best),
        D is Best / NA
    ).

pad(B, Other, P) :- length(B, L), ( L >= Other -> P = B ; K is Other - L, length(Ph, K), maplist(=(-), Ph), append(B, Ph, P) ).

%   Branch and bound over injective renamings (each variable of rule 1 to a distinct
%   variable of rule 2 or to none); for each renaming the best pairing is found by
%   trying the permutations of the second body (bodies are short).
aggregate_min_renaming(V1s, V2s, H1, H2, P1, P2, Best) :-
    nb_setval('$rudas_best', inf),
    (   renaming(V1s, V2s, W),
        atom_distance(H1, H2, W, DH),
        best_pairing(P1, P2, W, DB),
        S is DH + DB,
        nb_getval('$rudas_best', B0),
        ( B0 == inf ; S < B0 ),
        nb_setval('$rudas_best', S),
        S =:= 0
    ->  true
    ;   true
    ),
    nb_getval('$rudas_best', Best).

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
r_score([], _, 1.0) :- !.
r_score(Orig, Learned, Score) :-
    foldl(best_match(Learned), Orig, 0, Sum),
    length(Orig, N),
    Score is 1 - Sum / N.

best_match(Learned, R, S0, S) :-
    R = rule(H, _), functor(H, N, A),
    (   aggregate_all(min(D), ( member(L, Learned), L = rule(H2, _), functor(H2, N, A),
                                rule_distance(R, L, D) ), Min)
    ->  true
    ;   Min = 1
    ),
    S is S0 + Min.
