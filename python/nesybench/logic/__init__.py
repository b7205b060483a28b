"""Bridges to the logic engines: the only modules that import janus (SWI-Prolog) or clingo.

Capabilities call :mod:`nesybench.logic.prolog` and :mod:`nesybench.logic.asp`; they never talk
to the engines themselves.
"""
