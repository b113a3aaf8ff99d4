"""What an in-process pytester run needs loaded before it starts.

An in-process run (``pytester.runpytest``) drops the modules first imported
inside it when it ends. torch is a C extension that cannot be imported twice
in one process; its compile stack, the fault backends and the plugin's own
modules register backends, operators and templates that torch refuses to
register twice; and a Hypothesis reloaded after the plugin would no longer
recognise the plugin's strategies. Imported here, by the test module, they
outlive every inner run.

Only runs whose programs cannot kill or hang their process belong in
process; crashes, hangs, xdist workers and import costs keep
``runpytest_subprocess``.
"""

from __future__ import annotations

import importlib

from torch._dynamo.backends import registry

MODULES = (
    "hypothesis",
    "hypothesis.strategies",
    "torch._dynamo.repro.after_dynamo",
    "torch._inductor.compile_fx",
    "torch._inductor.lowering",
    "cgraph_doubles.faults",
    "cgraph_doubles.killers",
    "pytest_cgraph.plugin.campaign",
    "pytest_cgraph.checking.checkers",
    "pytest_cgraph.plugin.crashes",
    "pytest_cgraph.checking.guard",
    "pytest_cgraph.plugin.marker",
    "pytest_cgraph.plugin.hooks",
    "pytest_cgraph.recording.repro",
    "pytest_cgraph.checking.runner",
    "pytest_cgraph.recording.standalone",
    "pytest_cgraph.reporting.stats",
    "pytest_cgraph.strategies.generate",
    "pytest_cgraph.strategies.ops",
    "pytest_cgraph.strategies.program",
    "pytest_cgraph.strategies.templates",
)

for _name in MODULES:
    importlib.import_module(_name)
registry._lazy_import()
