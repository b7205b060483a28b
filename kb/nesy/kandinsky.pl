% Kandinsky-RS (ProbLog twin of kb/shortcuts/kandinsky.lp): figures F of objects O with
% shape(F, O) and color(F, O). A figure shows the pattern iff two distinct objects share both
% shape and colour; the label is 1 iff every figure shows the pattern.
fig(F) :- var(_, shape(F, _)).
pattern(F) :- var(_, shape(F, O1)), var(_, shape(F, O2)), O1 < O2,
              c(shape(F, O1), S), c(shape(F, O2), S), c(color(F, O1), C), c(color(F, O2), C).
nopattern :- fig(F), \+ pattern(F).
y(y, 1) :- \+ nopattern.
y(y, 0) :- nopattern.
