% Primate splice-junction domain theory (Towell, Shavlik & Noordewier, AAAI 1990), in the
% rule language of prolog/ski/vocab.pl. Positions run -30..-1, 1..30 (no 0); seq(X, P, Codes)
% reads IUPAC codes from position P on: M = a|c, R = a|g, Y = c|t.
%
% Exon-intron (donor) boundary:  EI :- @-3 'MAGGTRAGT', not EI-stop.
class(X, ei) :- exon_intron(X).
exon_intron(X) :- seq(X, -3, 'MAGGTRAGT'), \+ ei_stop(X).

% a stop codon in any of the three reading frames that end at the boundary
ei_stop(X) :- seq(X, -3, 'TAA').
ei_stop(X) :- seq(X, -3, 'TAG').
ei_stop(X) :- seq(X, -3, 'TGA').
ei_stop(X) :- seq(X, -4, 'TAA').
ei_stop(X) :- seq(X, -4, 'TAG').
ei_stop(X) :- seq(X, -4, 'TGA').
ei_stop(X) :- seq(X, -5, 'TAA').
ei_stop(X) :- seq(X, -5, 'TAG').
ei_stop(X) :- seq(X, -5, 'TGA').

% Intron-exon (acceptor) boundary:  IE :- pyrimidine-rich, @-3 'YAGG', not IE-stop.
class(X, ie) :- intron_exon(X).
intron_exon(X) :- pyrimidine_rich(X), seq(X, -3, 'YAGG'), \+ ie_stop(X).

% 6 of the 10 bases at -15..-6 are pyrimidines
pyrimidine_rich(X) :-
    m_of_n(6, [base(X, -15, y), base(X, -14, y), base(X, -13, y), base(X, -12, y),
               base(X, -11, y), base(X, -10, y), base(X, -9, y), base(X, -8, y),
               base(X, -7, y), base(X, -6, y)]).

% a stop codon in any of the three reading frames that start at the boundary
ie_stop(X) :- seq(X, 1, 'TAA').
ie_stop(X) :- seq(X, 1, 'TAG').
ie_stop(X) :- seq(X, 1, 'TGA').
ie_stop(X) :- seq(X, 2, 'TAA').
ie_stop(X) :- seq(X, 2, 'TAG').
ie_stop(X) :- seq(X, 2, 'TGA').
ie_stop(X) :- seq(X, 3, 'TAA').
ie_stop(X) :- seq(X, 3, 'TAG').
ie_stop(X) :- seq(X, 3, 'TGA').

% the paper's extra rule for the third class
class(X, n) :- \+ class(X, ei), \+ class(X, ie).
