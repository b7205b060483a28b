:- module(kandy_ilp,
          [ ilp_bk_module/3,         % +Encoding, +Kb, -Module
            set_pointer_facts/2,     % +BkModule, +FactTexts
            check_examples/3,        % +TheoryModule, +Texts, -Flags
            theory_size/4            % +Text, -Clauses, -MaxLiterals, -TotalLiterals
          ]).
/** <module> Evaluating learned ILP theories on KANDY samples

The ILP background knowledge files in kb/kandy/ilp/ (natural/pointer encoding x minimal/mid/large
KB) are plain Prolog, written to be pasted into Aleph .b files. For evaluation each one is
loaded once into a module of its own, kandy_ilp_bk_<Encoding>_<Kb>; a learned theory (untrusted)
is then loaded with safe_load into a fresh module that imports it, and every example of a split
is checked in one call.

In the pointer encoding the samples are constants: set_pointer_facts/2 replaces the
defined_as/3 and sample_is/2 facts of the BK module before the check.

==
?- ilp_bk_module(natural, mid, Bk),
   load_rules_text(th, "valid(C) :- contains(C, X), house(X).", [Bk], ok(_)),
   check_examples(th, ["side_by_side([stack([triangle_red_small, square_red_small])])"], F).
F = [1].
==
*/
:- use_module(library(apply)).
:- use_module(library(lists)).

%   A theory that loops is the theory's fault: the example counts as "not covered" (flag -1).
inference_limit(5 000 000).

%!  ilp_bk_module(+Encoding:atom, +Kb:atom, -Module:atom) is det.
%
%   Module holds kb/kandy/ilp/<Encoding>_<Kb>.pl (loaded on first use).
ilp_bk_module(Encoding, Kb, Module) :-
    must_be(oneof([natural, pointer]), Encoding),
    must_be(oneof([minimal, mid, large]), Kb),
    atomic_list_concat([kandy_ilp_bk, Encoding, Kb], '_', Module),
    (   current_predicate(Module:contains/2)
    ->  true
    ;   module_property(kandy_ilp, file(Here)),
        file_directory_name(Here, Dir),
        atomic_list_concat([Dir, '/../kb/kandy/ilp/', Encoding, '_', Kb, '.pl'], File0),
        absolute_file_name(File0, File, [access(read)]),
        %   Only system below the KB: a predicate loaded into `user` elsewhere in the
        %   process (e.g. kb/kandy/bk.pl's house/1) must not leak into a smaller KB.
        set_module(Module:base(system)),
        load_files(Module:File, [silent(true)])
    ).

%!  set_pointer_facts(+BkModule:atom, +FactTexts:list) is det.
%
%   Replace every defined_as/3 and sample_is/2 fact of BkModule by the facts in FactTexts
%   (each the text of one fact, e.g. "defined_as(c000000, stack, [c000001])").
set_pointer_facts(Module, Texts) :-
    retractall(Module:defined_as(_, _, _)),
    retractall(Module:sample_is(_, _)),
    forall(member(Text, Texts),
           ( term_string(Fact, Text),
             (   ( Fact = defined_as(_, _, _) ; Fact = sample_is(_, _) )
             ->  assertz(Module:Fact)
             ;   domain_error(pointer_fact, Fact)
             ) )).

%!  check_examples(+Module:atom, +Texts:list, -Flags:list) is det.
%
%   For each text (the argument of valid/1: a natural-encoding sample or a pointer sample
%   constant), Flags holds 1 when Module:valid/1 proves it, 0 when it fails, and -1 when the
%   proof raised an error or ran out of inferences (both counted as "not covered" by callers).
check_examples(Module, Texts, Flags) :-
    inference_limit(Limit),
    maplist(check_one(Module, Limit), Texts, Flags).

check_one(Module, Limit, Text, Flag) :-
    term_string(Sample, Text),
    catch(( call_with_inference_limit(Module:valid(Sample), Limit, Result)
          ->  ( Result == inference_limit_exceeded -> Flag = -1 ; Flag = 1 )
          ;   Flag = 0 ),
          _Error,
          Flag = -1).

%!  theory_size(+Text, -Clauses:int, -MaxLiterals:int, -TotalLiterals:int) is det.
%
%   Size of the clauses in Text (read, never run; directives are skipped). The literals of a
%   clause are its head plus its top-level body conjuncts: `\+ G`, `(A ; B)` and `(A -> B)`
%   count as one literal each, and a fact (body `true`) has the head only. MaxLiterals is the
%   largest clause (the L of the paper's Table 2), 0 for an empty theory.
theory_size(Text, Clauses, MaxLiterals, TotalLiterals) :-
    setup_call_cleanup(
        open_string(Text, Stream),
        read_sizes(Stream, Sizes),
        close(Stream)),
    length(Sizes, Clauses),
    max_list([0|Sizes], MaxLiterals),
    sum_list(Sizes, TotalLiterals).

read_sizes(Stream, Sizes) :-
    read_term(Stream, Term, [syntax_errors(error)]),
    (   Term == end_of_file
    ->  Sizes = []
    ;   Term = (:- _)
    ->  read_sizes(Stream, Sizes)
    ;   clause_literals(Term, N),
        Sizes = [N|Rest],
        read_sizes(Stream, Rest)
    ).

clause_literals((_ :- Body), N) :- !,
    body_literals(Body, B),
    N is B + 1.
clause_literals(_, 1).

body_literals(true, 0) :- !.
body_literals((A, B), N) :- !,
    body_literals(A, NA),
    body_literals(B, NB),
    N is NA + NB.
body_literals(_, 1).
