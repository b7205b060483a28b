:- module(nesybench, []).
/** <module> nesybench from the SWI-Prolog top level: one entry point

Loads the KANDY, RuDaS and reasoning-shortcut modules and re-exports their documented
predicates, so that one command gives a Prolog user everything. The file is
library(nesybench) of the nesybench pack (pack.pl; scripts/build_pack.sh builds the archive),
and the source tree's prolog/nesybench.pl. The file search path nesybench/1 names the
folder above prolog/ (the pack's or the source tree's), where kb/ lies:

==
$ swipl prolog/nesybench.pl      % with the pack: ?- use_module(library(nesybench)).
?- task_valid(nesybench('kb/kandy/rules/easy/t15.pl'),
              side_by_side([stack([triangle_red_small, square_blue_small]), circle_red_large])).
?- rudas_generate('out/ds', _{category:rdg, size:xs, depth:2, seed:1}, Summary).
?- chase_files('out/ds/rules.txt', 'out/ds/train-support.txt', Derived).
==

Untrusted rules (a KANDY rule file, RS Prolog knowledge) are loaded through safe_load: line-
accurate syntax errors, a sandbox that refuses side effects (assert/retract, output, flags,
sleep), and bounded_once/4 (an inference and a wall-clock limit) around every check.
Errors print as `File:Line: message` through prolog:message//1 rules.

Re-exported:

  - KANDY (prolog/kandy.pl): task_valid/2, check_samples/3, load_task_rule/3; the
    background knowledge kb/kandy/bk.pl (contains/2, extract_shape/2, ...);
  - RuDaS (prolog/rudas/): rudas_generate/3, rudas_chase/2, rudas_chase/3, rudas_evaluate/3,
    rule_distance_text/3, r_score_text/3, chase/4, chase/5, chase_files/3, chase_files/4,
    read_rules/2, read_facts/2;
  - reasoning shortcuts (prolog/shortcuts/rs_knowledge.pl): labels_of/3;
  - safe_load (prolog/safe_load.pl): load_rules_text/4, load_rules_file/4, unload_rules/1,
    bounded_once/4, untrusted_limits/2.
*/
%   nesybench(Path) names a file of the pack (or of the source tree): the folder above prolog/,
%   wherever this file was loaded from, e.g. nesybench('kb/kandy/rules/easy/t15.pl').
:- multifile user:file_search_path/2.
:- dynamic user:file_search_path/2.
:- prolog_load_context(directory, Dir),
   file_directory_name(Dir, Root),
   (   user:file_search_path(nesybench, Root)
   ->  true
   ;   assertz(user:file_search_path(nesybench, Root))
   ).

:- reexport(kandy, [task_valid/2, check_samples/3, load_task_rule/3]).
:- reexport('../kb/kandy/bk').
:- reexport(rudas/rudas, [rudas_generate/3, rudas_chase/2, rudas_chase/3, rudas_evaluate/3,
                          rule_distance_text/3, r_score_text/3]).
:- reexport(rudas/chase, [chase/4, chase/5, chase_files/3, chase_files/4, read_rules/2,
                          read_facts/2]).
:- reexport(shortcuts/rs_knowledge, [labels_of/3]).
:- reexport(safe_load, [load_rules_text/4, load_rules_file/4, unload_rules/1, bounded_once/4,
                        untrusted_limits/2]).
