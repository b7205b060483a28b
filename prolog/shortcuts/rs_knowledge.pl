:- module(rs_knowledge, [labels_of/3]).
:- use_module('../safe_load', []).
/** <module> Evaluate Prolog task knowledge for the reasoning-shortcut counter

Knowledge written in Prolog defines label(+World, ?Label, ?Value), World being the list of
concept values in the task's variable order. It is loaded into its own module through the
sandbox (nesybench.logic.prolog.load_rules_file); the counter turns the resulting label
table into ASP facts for prolog/shortcuts/table.lp.
*/

%!  labels_of(+Module:atom, +Worlds:list(list), -Labels:list(list(list))) is det.
%
%   Labels is, for each world, the sorted list of [Label, Value] pairs that
%   Module:label(World, Label, Value) yields.
labels_of(Module, Worlds, Labels) :-
    maplist(world_labels(Module), Worlds, Labels).

%   Each world's labels are computed under safe_load:bounded_once/4 (the untrusted limits:
%   inferences, wall-clock seconds, memory); knowledge that hits one or raises an exception
%   throws rs_knowledge_error(World, Status), which the Python side reports as one line
%   (safe_load:status_message/2).
world_labels(Module, World, Pairs) :-
    safe_load:untrusted_limits(MaxInf, MaxSec),
    safe_load:bounded_once(findall([L, Y], Module:label(World, L, Y), Pairs0),
                           MaxInf, MaxSec, Status),
    (   Status == true
    ->  sort(Pairs0, Pairs)
    ;   throw(rs_knowledge_error(World, Status))
    ).
