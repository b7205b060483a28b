:- module(safe_load,
          [ load_rules_text/4,          % +Module, +Text, +Imports, -Outcome
            load_rules_file/4,          % +Module, +File, +Imports, -Outcome
            unload_rules/1,             % +Module
            outcome_parts/4,            % +Outcome, -Kind, -Line, -Message
            bounded_once/4,             % :Goal, +MaxInferences, +MaxSeconds, -Status
            untrusted_limits/2,         % -MaxInferences, -MaxSeconds
            denied_goal/1               % ?Name/Arity
          ]).
/** <module> Loading untrusted rules into a fresh module

Rules written by users (a `positive_rule` inside a KANDY YAML task, a learned RuDaS program)
are read term by term so that syntax errors come back with their line, directives are refused
(they would run at load time), and the loaded program is checked with library(sandbox) before
anything of it runs. Outcomes are terms, never printed warnings, so that Python can raise one
clear error.
*/
:- use_module(library(sandbox)).
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(yall)).
:- use_module(library(time)).

:- meta_predicate bounded_once(0, +, +, -).

%!  load_rules_text(+Module:atom, +Text:text, +Imports:list, -Outcome) is det.
%
%   Compile the clauses in Text into Module (wiped first), which imports the modules in
%   Imports. Outcome is `ok(Preds)` with the Name/Arity list of defined predicates, or one of
%   `syntax_error(Line, Message)`, `directive(Line)`, `unsafe(Line, Message)`,
%   `bad_clause(Line, Message)`. On any outcome but ok/1 the module is left empty.
load_rules_text(Module, Text, Imports, Outcome) :-
    setup_call_cleanup(
        open_string(Text, Stream),
        load_rules_stream(Module, Stream, Imports, Outcome),
        close(Stream)).

%!  load_rules_file(+Module:atom, +File, +Imports:list, -Outcome) is det.
%
%   As load_rules_text/4, reading from File. A missing file gives `no_file(File)`.
load_rules_file(Module, File, Imports, Outcome) :-
    (   exists_file(File)
    ->  setup_call_cleanup(
            open(File, read, Stream),
            load_rules_stream(Module, Stream, Imports, Outcome),
            close(Stream))
    ;   Outcome = no_file(File)
    ).

load_rules_stream(Module, Stream, Imports, Outcome) :-
    unload_rules(Module),
    catch(read_clauses(Stream, Clauses), Error, true),
    (   nonvar(Error)
    ->  error_outcome(Error, Outcome)
    ;   member(clause(Line, (:- _)), Clauses)
    ->  Outcome = directive(Line)
    ;   compile_clauses(Module, Imports, Clauses, Outcome)
    ),
    (   Outcome = ok(_) -> true ; unload_rules(Module) ).

%!  read_clauses(+Stream, -Clauses:list) is det.
%
%   Clauses is a list of clause(Line, Term). Throws syntax errors.
read_clauses(Stream, Clauses) :-
    read_term(Stream, Term, [ syntax_errors(error), term_position(Pos),
                              module(safe_load) ]),
    (   Term == end_of_file
    ->  Clauses = []
    ;   stream_position_data(line_count, Pos, Line),
        Clauses = [clause(Line, Term)|Rest],
        read_clauses(Stream, Rest)
    ).

error_outcome(error(syntax_error(What), Context), syntax_error(Line, Message)) :-
    !,
    syntax_context_line(Context, Line),
    format(string(Message), "syntax error: ~w", [What]).
error_outcome(Error, bad_clause(0, Message)) :-
    message_to_codes(Error, Message).

syntax_context_line(stream(_, Line, _, _), Line) :- !.
syntax_context_line(file(_, Line, _, _), Line) :- !.
syntax_context_line(string(_, _), 0) :- !.
syntax_context_line(_, 0).

message_to_codes(Error, Message) :-
    catch(message_to_codes_(Error, Message), _, format(string(Message), "~q", [Error])).
message_to_codes_(Error, Message) :-
    '$messages':translate_message(Error, Lines, []),
    with_output_to(string(Message), print_message_lines(current_output, '', Lines)).

compile_clauses(Module, Imports, Clauses, Outcome) :-
    maplist(import_into(Module), Imports),
    catch(( forall(member(clause(_, C), Clauses), add_clause(Module, C)),
            defined_preds(Module, Clauses, Preds),
            compile_predicates(Module, Preds) ),
          Error,
          true),
    (   nonvar(Error)
    ->  clause_error_line(Error, Clauses, Line),
        message_to_codes(Error, Msg),
        Outcome = bad_clause(Line, Msg)
    ;   sandbox_check(Module, Clauses, Preds, Outcome)
    ).

import_into(Module, Import) :-
    add_import_module(Module, Import, start).

add_clause(Module, Clause) :-
    (   Clause = (Head :- _) -> true ; Head = Clause ),
    must_be(callable, Head),
    functor(Head, Name, Arity),
    (   current_predicate(Module:Name/Arity)
    ->  true
    ;   dynamic(Module:Name/Arity)
    ),
    assertz(Module:Clause).

defined_preds(Module, Clauses, Preds) :-
    findall(Name/Arity,
            ( member(clause(_, C), Clauses),
              ( C = (H :- _) -> true ; H = C ),
              functor(H, Name, Arity) ),
            All),
    sort(All, Preds),
    maplist(not_system(Module), Preds).

not_system(_Module, Name/Arity) :-
    functor(Head, Name, Arity),
    (   predicate_property(system:Head, defined), \+ predicate_property(system:Head, dynamic)
    ->  throw(error(permission_error(modify, static_procedure, Name/Arity), _))
    ;   true
    ).

compile_predicates(Module, Preds) :-
    forall(member(P, Preds), compile_predicates([Module:P])).

clause_error_line(_, [clause(Line, _)|_], Line) :- !.
clause_error_line(_, _, 0).

%   Every body is checked as a goal in Module: library(sandbox) follows calls into the
%   module's own (now static) predicates and into imported background knowledge.
sandbox_check(Module, Clauses, Preds, Outcome) :-
    (   member(clause(Line, (_ :- Body)), Clauses),
        denied_in(Body, Goal)
    ->  format(string(Msg), "calls ~q, which is not allowed in a rule (side effects: \c
                             database, output, flags, sleeping)", [Goal]),
        Outcome = unsafe(Line, Msg)
    ;   member(clause(Line, (_ :- Body)), Clauses),
        catch(( safe_goal(Module:Body), fail ), Error, true),
        nonvar(Error)
    ->  sandbox_message(Error, Msg),
        Outcome = unsafe(Line, Msg)
    ;   Outcome = ok(Preds)
    ).

sandbox_message(error(permission_error(call, sandboxed, Goal), _), Msg) :- !,
    format(string(Msg), "calls ~q, which is not allowed in a rule (sandbox)", [Goal]).
sandbox_message(error(instantiation_error, _), Msg) :- !,
    Msg = "calls a goal that is not known until run time (call/N on a variable), which the sandbox cannot check".
sandbox_message(Error, Msg) :-
    message_to_codes(Error, Msg0),
    format(string(Msg), "refused by the sandbox: ~w", [Msg0]).

%!  denied_goal(?PI) is nondet.
%
%   Predicates that library(sandbox) accepts but that untrusted rules may not call: changing
%   the database (assert/retract: a rule would then depend on earlier checks), writing output
%   (would corrupt `--json` on stdout), changing flags or operators (would leak into the next
%   task's rules), and sleeping. format/3 into atom(_), string(_), codes(_) or chars(_) stays
%   allowed (it writes nothing).
denied_goal(Name/Arity) :-
    member(Name/Arity,
           [ assert/1, asserta/1, asserta/2, assertz/1, assertz/2, retract/1, retractall/1,
             abolish/1, abolish/2, erase/1, recorda/2, recorda/3, recordz/2, recordz/3,
             flag/3, nb_setval/2, b_setval/2,
             format/1, format/2, write/1, write/2, writeln/1, writeln/2, print/1, print/2,
             writeq/1, writeq/2, write_canonical/1, write_canonical/2, write_term/2,
             write_term/3, print_message/2, print_message_lines/3, portray_clause/1,
             portray_clause/2, listing/0, listing/1, listing/2, put_char/1, put_char/2,
             tab/1, tab/2, nl/0, nl/1, ansi_format/3,
             set_prolog_flag/2, create_prolog_flag/3, op/3, set_stream/2, style_check/1,
             sleep/1, halt/0, halt/1
           ]).

%   denied_in(+Body, -Goal): some sub-term of Body is a denied goal (a conservative scan of
%   the whole body, so that goals passed to findall/3, forall/2, \+ ... are found too).
denied_in(Body, Goal) :-
    sub_term(Goal, Body),
    callable(Goal),
    functor(Goal, Name, Arity),
    denied_goal(Name/Arity),
    \+ harmless_format(Goal),
    !.

harmless_format(format(Sink, _, _)) :-
    nonvar(Sink),
    functor(Sink, F, 1),
    memberchk(F, [atom, string, codes, chars]).

%!  untrusted_limits(-MaxInferences:integer, -MaxSeconds:number) is det.
%
%   Default limits for one untrusted goal (one KANDY sample check, one RS world's labels,
%   one task_valid/2 call): 10 million inferences and 10 seconds of wall-clock time.
untrusted_limits(10 000 000, 10).

%!  bounded_once(:Goal, +MaxInferences, +MaxSeconds, -Status) is det.
%
%   Run Goal once under an inference limit and a wall-clock limit. Status is `true`,
%   `false`, `inference_limit(MaxInferences)`, `time_limit(MaxSeconds)` or `error(E)`.
bounded_once(Goal, MaxInf, MaxSec, Status) :-
    (   catch(call_with_time_limit(
                  MaxSec,
                  call_with_inference_limit(Goal, MaxInf, Result)),
              Error, true)
    ->  (   nonvar(Error)
        ->  (   Error == time_limit_exceeded
            ->  Status = time_limit(MaxSec)
            ;   Error = error(signal(_, _), _)
            ->  throw(Error)                     % Ctrl-C / SIGTERM: let the caller stop
            ;   Status = error(Error)
            )
        ;   Result == inference_limit_exceeded
        ->  Status = inference_limit(MaxInf)
        ;   Status = true
        )
    ;   Status = false
    ).

%!  unload_rules(+Module:atom) is det.
%
%   Remove every clause and predicate of Module so that it can be reused.
unload_rules(Module) :-
    forall(( current_predicate(Module:Name/Arity),
             functor(Head, Name, Arity),
             \+ predicate_property(Module:Head, imported_from(_)) ),
           abolish_pred(Module, Name/Arity)).

abolish_pred(Module, PI) :-
    catch(abolish(Module:PI), _, true).

%!  outcome_parts(+Outcome, -Kind:atom, -Line:integer, -Message) is det.
%
%   Flatten an outcome for callers that cannot take compound terms (Python through janus).
%   For ok(Preds), Message is the list of "Name/Arity" strings.
outcome_parts(ok(Preds), ok, 0, Strings) :- !,
    maplist([P, S]>>term_string(P, S), Preds, Strings).
outcome_parts(syntax_error(Line, Msg), syntax_error, Line, Msg) :- !.
outcome_parts(directive(Line), directive, Line, "") :- !.
outcome_parts(unsafe(Line, Msg), unsafe, Line, Msg) :- !.
outcome_parts(bad_clause(Line, Msg), bad_clause, Line, Msg) :- !.
outcome_parts(no_file(File), no_file, 0, File) :- !.
outcome_parts(Other, unknown, 0, Msg) :- term_string(Other, Msg).
