"""Reporting a run: its statistics, merged across processes, and its pages.

``stats`` gathers an item's figures (programs, failures, known bugs seen
again) as one record that merges on the controller and summarises at the end;
``report`` renders the JSON report as one static HTML page
(``python -m pytest_cgraph.report``), with the standard library alone.
"""
