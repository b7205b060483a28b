:- module(safe_load,
          [ load_rules_text/4,          % +Module, +Text, +Imports, -Outcome
            load_rules_file/4,          % +Module, +File, +Imports, -Outcome
            unload_rules/1,             % +Module
            outcome_parts/4,            % +Outcome, -Kind, -Line, -Message
            bounded_once/4,             % :Goal, +MaxInferences, +MaxSeconds, -Status
            bounded_maplist/6,          % :Goal, +Items, -Flags, +MaxInf, +MaxSec, -Outcome
            with_time_limit/2,          % +Seconds, :Goal
            untrusted_limits/2,         % -MaxInferences, -MaxSeconds
            untrusted_memory/2,         % -StackBytes, -AtomBytes
            untrusted_term_limits/2,    % -MaxDepth, -MaxSize
            read_untrusted_term/4,      % +Stream, -Term, -Line, +Options
            term_within_limits/4,       % +Term, +MaxDepth, +MaxSize, -Verdict
            status_message/2,           % +Status, -Message
            error_message/2,            % +Error, -Message
            allowed_call/1              % ?Name/Arity
          ]).
/** <module> Loading untrusted rules into a fresh module

Rules written by users (a `positive_rule` inside a KANDY YAML task, a learned RuDaS program)
are read term by term so that syntax errors come back with their line, directives are refused
(they would run at load time), and the loaded program is checked with library(sandbox) before
anything of it runs. Outcomes are terms, never printed warnings, so that Python can raise one
clear error.

Every term read from untrusted text goes through read_untrusted_term/4: its nesting depth
and its number of subterms are checked (without recursion) before anything else touches it,
because printing, asserting or sandbox-checking a term recurses in C and a term nested tens of
thousands deep would overflow the C stack and kill the process.
*/
:- use_module(library(sandbox)).
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(yall)).
:- use_module(library(aggregate)).

:- meta_predicate bounded_once(0, +, +, -), with_time_limit(+, 0),
                  bounded_maplist(1, +, -, +, +, -).

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
    read_untrusted_term(Stream, Term, Line, [module(safe_load)]),
    (   Term == end_of_file
    ->  Clauses = []
    ;   Clauses = [clause(Line, Term)|Rest],
        read_clauses(Stream, Rest)
    ).

%!  untrusted_term_limits(-MaxDepth:integer, -MaxSize:integer) is det.
%
%   The largest term accepted from untrusted text: nested at most 1,000 deep (every argument,
%   list tails and conjunctions included) and made of at most 100,000 subterms. Printing,
%   asserting and compiling a term recurse in C; 1,000 levels stay far below any C stack.
untrusted_term_limits(1000, 100000).

%   The reader itself recurses in C too (brackets, operators), and inside an embedding
%   process (Python through janus) a C-stack overflow is a segmentation fault, not an
%   exception. So the raw text of each clause is scanned first (untrusted_text_limits/2):
%   at most 1,000 nested brackets and 10,000 tokens per clause.
untrusted_text_limits(1000, 10000).

%!  read_untrusted_term(+Stream, -Term, -Line:integer, +Options:list) is det.
%
%   Read the next clause of Stream like read_term/3 (syntax errors raised, Options passed on),
%   but bounded: the clause's raw text is read first ('$raw_read'/2: quotes and comments
%   handled in C without recursion) and its bracket nesting and token count checked, then it
%   is parsed, then the term is checked against untrusted_term_limits/2. Line is the line
%   where the clause starts. A clause over a limit throws
%   `untrusted_term_error(Line, Message)`.
read_untrusted_term(Stream, Term, Line, Options) :-
    '$raw_read'(Stream, Raw),
    (   Raw == end_of_file
    ->  Term = end_of_file, Line = 0
    ;   line_count(Stream, EndLine),
        newlines(Raw, NL),
        Line is EndLine - NL,
        check_raw_text(Raw, Line),
        catch(term_string(Term, Raw, [syntax_errors(error)|Options]),
              error(syntax_error(What), Ctx),
              raw_syntax_error(What, Ctx, Raw, Line)),
        untrusted_term_limits(MaxDepth, MaxSize),
        term_within_limits(Term, MaxDepth, MaxSize, Verdict),
        (   Verdict == ok
        ->  true
        ;   Verdict == depth
        ->  format(string(Msg), "term nested more than ~D levels deep", [MaxDepth]),
            throw(untrusted_term_error(Line, Msg))
        ;   format(string(Msg), "term of more than ~D subterms", [MaxSize]),
            throw(untrusted_term_error(Line, Msg))
        )
    ).

newlines(Text, N) :-
    aggregate_all(count, sub_atom(Text, _, 1, _, '\n'), N).

%   A syntax error inside the clause text: rethrown with the stream-style context
%   stream(_, Line, LinePos, CharNo) that callers decode, Line counted in the file.
raw_syntax_error(What, Ctx, Raw, Line0) :-
    (   Ctx = string(_, Pos), integer(Pos)
    ->  sub_atom(Raw, 0, Pos, _, Before),
        newlines(Before, N)
    ;   N = 0
    ),
    Line is Line0 + N,
    throw(error(syntax_error(What), stream(raw, Line, 0, 0))).

check_raw_text(Raw, Line) :-
    untrusted_text_limits(MaxDepth, MaxTokens),
    atom_length(Raw, Len),
    (   Len =< MaxDepth
    ->  true                                    % cannot exceed either limit
    ;   atom_codes(Raw, Codes),
        scan_raw(Codes, 0, 0, 0, MaxDepth, MaxTokens, Verdict),
        (   Verdict == ok
        ->  true
        ;   Verdict == depth
        ->  format(string(Msg), "clause nested more than ~D brackets deep", [MaxDepth]),
            throw(untrusted_term_error(Line, Msg))
        ;   format(string(Msg), "clause of more than ~D tokens", [MaxTokens]),
            throw(untrusted_term_error(Line, Msg))
        )
    ).

%   scan_raw(+Codes, +Depth, +Tokens, +Prev, +MaxDepth, +MaxTokens, -Verdict): Prev is the
%   class of the previous code (0 layout, 1 alphanumeric, 2 symbol char); a token starts at
%   every change of class and at every punctuation code. Quoted text counts as one token.
scan_raw([], _, _, _, _, _, ok).
scan_raw([C|Cs], D, T, Prev, MD, MT, V) :-
    (   T > MT
    ->  V = tokens
    ;   D > MD
    ->  V = depth
    ;   quote_code(C)
    ->  skip_quoted(Cs, C, Rest),
        T1 is T + 1,
        scan_raw(Rest, D, T1, 0, MD, MT, V)
    ;   C == 0'0, Cs = [39|Cs1]                    % 0'c character code
    ->  skip_char_code(Cs1, Rest),
        T1 is T + 1,
        scan_raw(Rest, D, T1, 0, MD, MT, V)
    ;   memberchk(C, `([{`)
    ->  D1 is D + 1, T1 is T + 1,
        scan_raw(Cs, D1, T1, 0, MD, MT, V)
    ;   memberchk(C, `)]}`)
    ->  D1 is D - 1, T1 is T + 1,
        scan_raw(Cs, D1, T1, 0, MD, MT, V)
    ;   memberchk(C, `,|!;`)
    ->  T1 is T + 1,
        scan_raw(Cs, D, T1, 0, MD, MT, V)
    ;   code_class(C, Class),
        (   Class =:= 0 -> T1 = T
        ;   Class =:= Prev -> T1 = T
        ;   T1 is T + 1
        ),
        scan_raw(Cs, D, T1, Class, MD, MT, V)
    ).

quote_code(39).                                 % '
quote_code(34).                                 % "
quote_code(96).                                 % `

code_class(C, 0) :- code_type(C, space), !.
code_class(C, 1) :- code_type(C, csym), !.
code_class(_, 2).

skip_quoted([], _, []).
skip_quoted([C|Cs], Q, Rest) :-
    (   C == 92                                 % backslash
    ->  ( Cs = [_|Cs1] -> skip_quoted(Cs1, Q, Rest) ; Rest = [] )
    ;   C == Q
    ->  ( Cs = [Q|Cs1] -> skip_quoted(Cs1, Q, Rest) ; Rest = Cs )
    ;   skip_quoted(Cs, Q, Rest)
    ).

skip_char_code([92, _|Cs], Cs) :- !.
skip_char_code([39, 39|Cs], Cs) :- !.
skip_char_code([_|Cs], Cs) :- !.
skip_char_code([], []).

%!  term_within_limits(+Term, +MaxDepth:integer, +MaxSize:integer, -Verdict) is det.
%
%   Verdict is `ok`, `depth` (some subterm lies deeper than MaxDepth) or `size` (more than
%   MaxSize subterms). Walks an explicit stack of Depth-Subterm pairs, so that the walk
%   itself never recurses deeper than one level, and stops at the first excess.
term_within_limits(Term, MaxDepth, MaxSize, Verdict) :-
    walk_limits([0-Term], MaxDepth, MaxSize, 0, Verdict).

walk_limits([], _, _, _, ok).
walk_limits([D-T|Ts], MaxD, MaxS, N0, Verdict) :-
    N is N0 + 1,
    (   D > MaxD
    ->  Verdict = depth
    ;   compound(T)
    ->  compound_name_arity(T, _, Arity),
        (   N + Arity > MaxS
        ->  Verdict = size
        ;   D1 is D + 1,
            push_args(Arity, T, D1, Ts, Ts1),
            walk_limits(Ts1, MaxD, MaxS, N, Verdict)
        )
    ;   walk_limits(Ts, MaxD, MaxS, N, Verdict)
    ).

push_args(0, _, _, Ts, Ts) :- !.
push_args(I, T, D, Ts, [D-A|Ts1]) :-
    arg(I, T, A),
    I1 is I - 1,
    push_args(I1, T, D, Ts, Ts1).

error_outcome(error(syntax_error(What), Context), syntax_error(Line, Message)) :-
    !,
    syntax_context_line(Context, Line),
    format(string(Message), "syntax error: ~w", [What]).
error_outcome(untrusted_term_error(Line, Msg), too_big(Line, Msg)) :- !.
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

%   Every body is first scanned for calls outside the allow-list (allowed_call/1): any
%   sub-term that names a built-in or library predicate must be allowed, whether it is called
%   directly or passed to findall/3, forall/2, \+ ... (a conservative scan of the whole
%   body). Then library(sandbox) checks each body as a goal in Module: it follows calls into
%   the module's own (now static) predicates and into imported background knowledge.
sandbox_check(Module, Clauses, Preds, Outcome) :-
    (   member(clause(Line, (_ :- Body)), Clauses),
        refused_in(Body, Preds, Module, Goal, Why)
    ->  refusal_message(Goal, Why, Msg),
        Outcome = unsafe(Line, Msg)
    ;   member(clause(Line, (_ :- Body)), Clauses),
        catch(( safe_goal(Module:Body), fail ), Error, true),
        nonvar(Error)
    ->  sandbox_message(Error, Msg),
        Outcome = unsafe(Line, Msg)
    ;   Outcome = ok(Preds)
    ).

refusal_message(Goal, builtin, Msg) :- !,
    format(string(Msg), "calls ~q, which is not allowed in a rule (rules may call their own \c
                         predicates, the background knowledge and the pure built-ins listed \c
                         in the safety guide)", [Goal]).
refusal_message(Goal, format, Msg) :-
    format(string(Msg), "calls ~q, which is not allowed in a rule (format/3 only into \c
                         atom(_), string(_), codes(_) or chars(_), with a literal format of \c
                         ~~w ~~a ~~d ~~q ~~s ~~n ~~~~ directives and counts up to 255)", [Goal]).

sandbox_message(error(permission_error(call, sandboxed, Goal), _), Msg) :- !,
    format(string(Msg), "calls ~q, which is not allowed in a rule (sandbox)", [Goal]).
sandbox_message(error(instantiation_error, _), Msg) :- !,
    Msg = "calls a goal that is not known until run time (call/N on a variable), which the sandbox cannot check".
sandbox_message(Error, Msg) :-
    error_message(Error, Msg0),
    format(string(Msg), "refused by the sandbox: ~w", [Msg0]).

%   refused_in(+Body, +Preds, +Module, -Goal, -Why): some sub-term Goal of Body names a
%   built-in or library predicate that is not allowed (Why = builtin), or is a format/3 call
%   outside bounded_format/1 (Why = format). Predicates the rules define themselves and those
%   of the imported background knowledge are not built-ins.
refused_in(Body, Preds, Module, Goal, Why) :-
    sub_term(Goal, Body),
    callable(Goal),
    functor(Goal, Name, Arity),
    Name/Arity \== '[|]'/2,                     % list cells are data here; consulting a
                                                %  list as a goal is refused by the sandbox
    \+ memberchk(Name/Arity, Preds),
    \+ imported_pred(Module, Goal),
    builtin_like(Goal),
    (   \+ allowed_call(Name/Arity)
    ->  Why = builtin
    ;   Name/Arity == format/3, \+ bounded_format(Goal)
    ->  Why = format
    ),
    !.

imported_pred(Module, Goal) :-
    import_module(Module, Imp),
    Imp \== user, Imp \== system,
    (   predicate_property(Imp:Goal, exported)
    ->  true
    ;   functor(Goal, Name, Arity),             % defined in the knowledge module itself
        current_predicate(Imp:Name/Arity),
        \+ predicate_property(Imp:Goal, imported_from(_)),
        \+ predicate_property(Imp:Goal, built_in)
    ),
    !.

builtin_like(Goal) :-
    predicate_property(system:Goal, defined), !.
builtin_like(Goal) :-
    functor(Goal, Name, Arity),
    functor(Head, Name, Arity),
    catch('$autoload':library_index(Head, _, _), _, fail), !.
builtin_like(Goal) :-                           % loaded libraries' exports
    predicate_property(user:Goal, imported_from(_)), !.

%!  allowed_call(?PI) is nondet.
%
%   The built-in and library predicates that untrusted rules may call: control, unification
%   and comparison, arithmetic, type checks, term inspection, text conversion, all-solutions
%   predicates and list utilities. Everything else (files, processes, the database, flags,
%   operators, tabling, loading code, parsing text into terms, output, sleeping) is refused;
%   this is an allow-list on top of library(sandbox), not a list of what is forbidden.
allowed_call(PI) :-
    allowed_calls(PIs),
    member(PI, PIs).

allowed_calls([ ','/2, ';'/2, '->'/2, '*->'/2, '\\+'/1, !/0, true/0, fail/0, false/0,
                once/1, ignore/1, forall/2, not/1,
                call/1, call/2, call/3, call/4, call/5, call/6, call/7, call/8,
                '='/2, '\\='/2, '=='/2, '\\=='/2, '@<'/2, '@>'/2, '@=<'/2, '@>='/2,
                '=@='/2, '\\=@='/2, compare/3, unify_with_occurs_check/2, subsumes_term/2,
                is/2, '<'/2, '>'/2, '=<'/2, '>='/2, '=:='/2, '=\\='/2, succ/2, plus/3,
                between/3,
                var/1, nonvar/1, atom/1, number/1, integer/1, float/1, atomic/1, compound/1,
                callable/1, is_list/1, string/1, ground/1, text_to_string/2,
                functor/3, arg/3, '=..'/2, copy_term/2, term_variables/2,
                compound_name_arity/3, compound_name_arguments/3,
                atom_codes/2, atom_chars/2, char_code/2, atom_length/2, atom_concat/3,
                sub_atom/5, atom_number/2, number_codes/2, number_chars/2, atom_string/2,
                upcase_atom/2, downcase_atom/2, string_concat/3, string_chars/2,
                string_codes/2, string_to_atom/2, string_length/2, sub_string/5,
                split_string/4, string_code/3, number_string/2, atomic_list_concat/2,
                atomic_list_concat/3, string_lower/2, string_upper/2, char_type/2,
                code_type/2, format/3,
                findall/3, findall/4, bagof/3, setof/3, '^'/2, aggregate_all/3,
                aggregate_all/4,
                member/2, memberchk/2, append/2, append/3, length/2, nth0/3, nth1/3, nth0/4,
                nth1/4, last/2, reverse/2, msort/2, sort/2, sort/4, predsort/3, keysort/2,
                permutation/2, select/3, selectchk/3, select/4, subtract/3, intersection/3,
                union/3, delete/3, exclude/3, include/3, partition/4, partition/6,
                maplist/2, maplist/3, maplist/4, maplist/5, maplist/6, maplist/7,
                foldl/4, foldl/5, foldl/6, sum_list/2, sumlist/2, max_list/2, min_list/2,
                max_member/2, min_member/2, list_to_set/2, numlist/3, nextto/3, flatten/2,
                proper_length/2, pairs_keys_values/3, pairs_keys/2, pairs_values/2,
                list_to_ord_set/2, ord_subtract/3, ord_union/3, ord_memberchk/2,
                ord_intersection/3, ord_subset/2, exclude/3
              ]).

%!  bounded_format(+Goal) is semidet.
%
%   format/3 that writes into a term (atom/string/codes/chars) with a literal format whose
%   directives are ~w ~a ~d ~q ~s ~n ~~ and whose counts are at most 255: no format/3 call of
%   a rule can then build text much larger than its arguments (`~*c` with a count of 10^8
%   would allocate gigabytes in one call, below any stack limit).
bounded_format(format(Sink, Format, _)) :-
    nonvar(Sink),
    functor(Sink, F, 1),
    memberchk(F, [atom, string, codes, chars]),
    (   atom(Format) ; string(Format) ),
    string_codes(Format, Codes),
    format_codes_ok(Codes).

format_codes_ok([]).
format_codes_ok([0'~|Cs]) :- !,
    format_count(Cs, 0, Rest),
    Rest = [D|Cs1],
    memberchk(D, `wadqsn~`),
    format_codes_ok(Cs1).
format_codes_ok([_|Cs]) :-
    format_codes_ok(Cs).

format_count([C|Cs], N0, Rest) :-
    between(0'0, 0'9, C), !,
    N is N0 * 10 + C - 0'0,
    N =< 255,
    format_count(Cs, N, Rest).
format_count(Cs, _, Cs).

%!  untrusted_limits(-MaxInferences:integer, -MaxSeconds:number) is det.
%
%   Default limits for one untrusted goal (one KANDY sample check, one RS world's labels,
%   one task_valid/2 call): 10 million inferences and 10 seconds of wall-clock time.
untrusted_limits(10 000 000, 10).

%!  untrusted_memory(-StackBytes:integer, -AtomBytes:integer) is det.
%
%   Memory bound of one untrusted goal: 256 MiB of Prolog stacks (the thread's stack_limit
%   while it runs) and 256 MiB of new atoms (checked every 50 ms). Integers are capped at
%   1 MiB each where the system has the max_integer_size flag.
untrusted_memory(268435456, 268435456).

%!  bounded_once(:Goal, +MaxInferences, +MaxSeconds, -Status) is det.
%
%   Run Goal once under an inference limit, a wall-clock limit and the memory bound of
%   untrusted_memory/2. Status is `true`, `false`, `inference_limit(MaxInferences)`,
%   `time_limit(MaxSeconds)` or `error(E)` (a memory excess is
%   `error(error(resource_error(What), _))`; status_message/2 renders any status as one line).
bounded_once(Goal, MaxInf, MaxSec, Status) :-
    untrusted_memory(_, AtomBytes),
    (   catch(with_memory_bound(
                  watched(MaxSec, AtomBytes,
                          call_with_inference_limit(Goal, MaxInf, Result))),
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

%!  bounded_maplist(:Goal, +Items:list, -Flags:list, +MaxInferences, +MaxSeconds,
%!                  -Outcome) is det.
%
%   call(Goal, Item) once for each of Items, in order, each under the bounds of
%   bounded_once/4: at most MaxInferences inferences and MaxSeconds of wall-clock time per
%   call, and the memory bound of untrusted_memory/2 (stacks and new atoms of the whole
%   list). Flags holds 1 for each call that succeeded and 0 for each that failed. Outcome is
%   `done`, or `stopped(Index, Status)` for the first call (0-based Index) whose status is
%   neither true nor false, a status as bounded_once/4 gives it (Flags then holds the calls
%   before it). The list is registered with the watchdog once and its deadline moved as
%   each call starts: registering every call, as bounded_once/4 would, costs more than
%   checking a small rule.
bounded_maplist(Goal, Items, Flags, MaxInf, MaxSec, Outcome) :-
    untrusted_memory(_, AtomBytes),
    thread_self(Me),
    format(atom(Clock), 'safe_load_clock_~w', [Me]),
    flag(Clock, _, 1.0e300),
    nb_setval(safe_load_item, 0),
    catch(with_memory_bound(
              watched(clock(Clock), AtomBytes,
                      bounded_items(Items, 0, Goal, MaxInf, MaxSec, Clock, Flags, Outcome))),
          Error, true),
    flag(Clock, _, 1.0e300),
    (   var(Error)
    ->  true
    ;   Error = error(signal(_, _), _)
    ->  throw(Error)                     % Ctrl-C / SIGTERM: let the caller stop
    ;   nb_getval(safe_load_item, I),    % a bound hit between two calls' own catches
        item_status(Error, _, MaxInf, MaxSec, Status),
        Flags = [],
        Outcome = stopped(I, Status)
    ).

bounded_items([], _, _, _, _, _, [], done).
bounded_items([Item|Items], I, Goal, MaxInf, MaxSec, Clock, Flags, Outcome) :-
    nb_setval(safe_load_item, I),
    get_time(Now),
    Deadline is Now + MaxSec,
    flag(Clock, _, Deadline),
    % the deadline is withdrawn inside the catch: a late signal then finds it gone
    catch(( (   call_with_inference_limit(call(Goal, Item), MaxInf, Result)
            ->  true
            ;   Result = false
            ),
            flag(Clock, _, 1.0e300) ),
          Error, true),
    flag(Clock, _, 1.0e300),
    item_status(Error, Result, MaxInf, MaxSec, Status),
    (   Status == true
    ->  Flags = [1|Rest]
    ;   Status == false
    ->  Flags = [0|Rest]
    ;   Flags = [],
        Outcome = stopped(I, Status)
    ),
    (   var(Outcome)
    ->  I1 is I + 1,
        bounded_items(Items, I1, Goal, MaxInf, MaxSec, Clock, Rest, Outcome)
    ;   true
    ).

item_status(Error, _, _, MaxSec, Status) :-
    nonvar(Error),
    !,
    (   Error == time_limit_exceeded
    ->  Status = time_limit(MaxSec)
    ;   Error = error(signal(_, _), _)
    ->  throw(Error)
    ;   Status = error(Error)
    ).
item_status(_, Result, MaxInf, _, Status) :-
    (   Result == inference_limit_exceeded
    ->  Status = inference_limit(MaxInf)
    ;   Result == false
    ->  Status = false
    ;   Status = true
    ).

:- meta_predicate with_memory_bound(0).

%   with_memory_bound(:Goal): once(Goal) with this thread's stack_limit lowered to what is in
%   use plus StackBytes and integers capped (the atom space is watched by watched/3).
with_memory_bound(Goal) :-
    untrusted_memory(StackBytes, _),
    current_prolog_flag(stack_limit, OldLimit),
    statistics(stack, Used),
    Limit is min(OldLimit, Used + StackBytes),
    setup_call_cleanup(
        ( set_prolog_flag(stack_limit, Limit),
          set_integer_cap(OldCap) ),
        once(Goal),
        ( restore_integer_cap(OldCap),
          set_prolog_flag(stack_limit, OldLimit) )).

%!  with_time_limit(+Seconds:number, :Goal) is semidet.
%
%   once(Goal), throwing `time_limit_exceeded` once Seconds of wall-clock time have passed,
%   like call_with_time_limit/2 of library(time) but kept by this module's watchdog thread.
%   library(time) is not used: its alarm scheduler thread can deadlock the process at halt
%   (the scheduler leaves its mutex locked when it stops, and halt sets its stop flag without
%   that mutex; a halt shortly after an alarm was removed hangs when the scheduler runs late).
with_time_limit(Seconds, Goal) :-
    watched(Seconds, inf, Goal).

:- meta_predicate watched(+, +, 0).
:- dynamic watched_goal/5.             % Token, Thread, Deadline, Atoms0, MaxAtoms

%   watched(+Seconds, +MaxAtomBytes, :Goal): once(Goal) while the watchdog thread checks, every
%   50 ms, its deadline (time_limit_exceeded) and the growth of the atom space
%   (error(resource_error(atom_space), _)); either is thrown in this thread, once.
watched(Limit, MaxAtoms, Goal) :-
    watch_deadline(Limit, Deadline),
    statistics(atom_space, Atoms0),
    thread_self(Me),
    flag(safe_load_watch, N, N + 1),
    Token = watch(N),
    setup_call_cleanup(
        arm(Token, Me, Deadline, Atoms0, MaxAtoms),
        once(Goal),
        disarm(Token)).

%   A number of seconds from now, or clock(Key): the deadline is the value of the flag Key,
%   moved by the watched goal itself (bounded_maplist/6).
watch_deadline(clock(Key), clock(Key)) :- !.
watch_deadline(Seconds, Deadline) :-
    get_time(Now),
    Deadline is Now + Seconds.

arm(Token, Me, Deadline, Atoms0, MaxAtoms) :-
    active_watches(Active),
    nb_setval(safe_load_active, [Token|Active]),
    with_mutex(safe_load_watchdog,
               ( assertz(watched_goal(Token, Me, Deadline, Atoms0, MaxAtoms)),
                 (   flag(safe_load_watchdog, 1, 1)
                 ->  true
                 ;   flag(safe_load_watchdog, _, 1),
                     thread_create(watchdog, _, [detached(true)])
                 ) )).

disarm(Token) :-
    active_watches(Active),                    % first: a late signal is then ignored
    exclude(==(Token), Active, Rest),
    nb_setval(safe_load_active, Rest),
    with_mutex(safe_load_watchdog, retractall(watched_goal(Token, _, _, _, _))).

active_watches(Active) :-
    (   nb_current(safe_load_active, Active0)
    ->  Active = Active0
    ;   Active = []
    ).

%   The watchdog: wakes every 50 ms, signals the goals past their bound, and ends when no goal
%   is watched (the next watched/3 starts a new one). A Prolog thread, so halt stops it.
watchdog :-
    repeat,
    sleep(0.05),
    get_time(Now),
    statistics(atom_space, Atoms),
    forall(with_mutex(safe_load_watchdog,
                      ( watched_goal(Token, Thread, Deadline, Atoms0, Max),
                        exceeded(Now, Atoms, Deadline, Atoms0, Max, Error),
                        (   Error = clock_expired(_, _)
                        ->  true                % the goal itself withdraws its deadline
                        ;   retract(watched_goal(Token, Thread, Deadline, Atoms0, Max))
                        ) )),
           catch(thread_signal(Thread, safe_load:expired(Token, Error)), _, true)),
    with_mutex(safe_load_watchdog,
               (   watched_goal(_, _, _, _, _)
               ->  Done = false
               ;   flag(safe_load_watchdog, _, 0),
                   Done = true
               )),
    Done == true,
    !.

exceeded(Now, _, clock(Key), _, _, clock_expired(Key, Deadline)) :-
    flag(Key, Deadline, Deadline),
    Now >= Deadline,
    !.
exceeded(Now, _, Deadline, _, _, time_limit_exceeded) :-
    number(Deadline),
    Now >= Deadline,
    !.
exceeded(_, Atoms, _, Atoms0, Max, error(resource_error(atom_space), context(untrusted_goal, _))) :-
    Max \== inf,
    Atoms - Atoms0 > Max.

%   Run in the watched thread: throw only while that goal is still being watched; for a
%   clock, only while the call whose deadline passed still runs (its deadline is still the
%   flag's value; it is withdrawn at once, so a later signal finds nothing to stop).
expired(Token, clock_expired(Key, Deadline)) :-
    !,
    active_watches(Active),
    (   memberchk(Token, Active),
        flag(Key, Deadline, 1.0e300)
    ->  throw(time_limit_exceeded)
    ;   true
    ).
expired(Token, Error) :-
    active_watches(Active),
    (   memberchk(Token, Active)
    ->  throw(Error)
    ;   true
    ).

set_integer_cap(Old) :-
    (   catch(current_prolog_flag(max_integer_size, Old), _, fail)
    ->  ( integer(Old), Old < 1048576 -> true ; set_prolog_flag(max_integer_size, 1048576) )
    ;   Old = none
    ).

restore_integer_cap(none) :- !.
restore_integer_cap(Old) :- set_prolog_flag(max_integer_size, Old).

%!  status_message(+Status, -Message:string) is det.
%
%   One line for a bounded_once/4 status other than true/false.
status_message(inference_limit(N), Msg) :- !,
    format(string(Msg), "more than ~D inferences (the rule loops or explodes)", [N]).
status_message(time_limit(S), Msg) :- !,
    format(string(Msg), "more than ~w s of wall-clock time", [S]).
status_message(error(E), Msg) :- !,
    error_message(E, Msg).
status_message(Other, Msg) :-
    error_message(Other, Msg).

%!  error_message(+Error, -Message:string) is det.
%
%   One line for an exception of untrusted code (never a raw stack dump: a resource error
%   carries the whole stack as a dict).
error_message(error(resource_error(What), _), Msg) :- !,
    untrusted_memory(Stack, Atoms),
    SM is Stack // 1048576, AM is Atoms // 1048576,
    (   What == atom_space
    ->  format(string(Msg), "ran out of memory: more than ~w MiB of new atoms (the bound of \c
                             one untrusted check)", [AM])
    ;   memberchk(What, [memory, max_integer_size])
    ->  format(string(Msg), "ran out of memory (~w; the bound of one untrusted check is \c
                             ~w MiB of stacks and ~w MiB of atoms)", [What, SM, AM])
    ;   format(string(Msg), "ran out of memory: more than ~w MiB of Prolog stacks (the \c
                             bound of one untrusted check)", [SM])
    ).
error_message(time_limit_exceeded, Msg) :- !,
    Msg = "ran out of time".
error_message(Error, Msg) :-
    message_to_codes(Error, Msg0),
    split_string(Msg0, "\n\t ", "\n\t ", Words0),
    exclude(==(""), Words0, Words),
    atomic_list_concat(Words, ' ', Atom),
    atom_string(Atom, Msg).

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
outcome_parts(too_big(Line, Msg), too_big, Line, Msg) :- !.
outcome_parts(Other, unknown, 0, Msg) :- term_string(Other, Msg).
