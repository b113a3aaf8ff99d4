"""Test doubles: fault-injection backends and a CPU stand-in for CUDA-graph trees.

Importable as ``cgraph_doubles`` (pytest's ``pythonpath`` adds ``tests/``),
also by child pytest processes given ``-p cgraph_doubles.faults``.
"""
