% n-bit XOR (parity) in Prolog: label(+Bits, ?Label, ?Value).
label(Bits, y, P) :- sum_list(Bits, S), P is S mod 2.
