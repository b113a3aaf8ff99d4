"""Hunting: a campaign item's search for new bugs, round after round, and what it keeps.

``hunt`` runs Hypothesis rounds over one family's programs; ``findings``
shares the bugs found so far between processes; ``set_aside`` keeps bugs met
while another is shrunk; ``keep_failing``, ``database`` and
``database_outage`` are the example databases a hunt reads and writes
(``--cgraph-database``). The pytest items that drive a hunt live in
:mod:`pytest_cgraph.plugin`.
"""
