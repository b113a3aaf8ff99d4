"""Hypothesis strategies that draw small tensor programs (``pytest_cgraph.strategies``).

Installed under the plugin's namespace from the repository's ``strategies/``
folder. This package never imports the runner or the plugin: programs flow
from here to them, not back.
"""

__all__: list[str] = []
