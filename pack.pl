% The SWI-Prolog pack of nesybench's logic core: prolog/ (library(nesybench) and the modules
% it loads) and kb/ (the knowledge bases they read). scripts/build_pack.sh writes the archive
% dist/nesybench-<version>.tgz; the version must equal pyproject.toml's.
name(nesybench).
version('0.2.0').
title('nesybench logic core: KANDY checks, RuDaS chase and metrics, sandboxed rules').
author('The nesybench developers', '').
keywords([benchmark, 'neuro-symbolic', kandy, rudas, ilp, sandbox]).
requires(prolog >= '9.1.12').
