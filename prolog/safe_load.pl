:- module(safe_load,
          [ load_rules_text/4,          % +Module, +Text, +Imports, -Outcome
            load_rules_file/4,          % +Module, +File, +Imports, -Outcome
            unload_rules/1,             % +Module
            outcome_parts/4             % +Outcome, -Kind, -Line, -Message
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
