"""Recording a failure: a verified repro file, a registry entry, a plain torch script.

``repro`` writes a failure as a standalone repro file (the oracle pasted in)
and verifies it replays; ``record`` records a hand-written program as a
known bug (``python -m pytest_cgraph.record``); ``standalone`` writes a marked
test as program source; ``plain`` turns a repro into a few lines of torch and
a report to file (``python -m pytest_cgraph.plain``).
"""
