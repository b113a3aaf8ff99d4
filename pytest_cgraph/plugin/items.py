"""What the plugin's own pytest items share: failures that are already written for a reader.

A campaign item, a dead program's item and a known bug's item each fail
by raising one exception whose text is the whole report (the difference,
the program, the repro). pytest's own representation would bury it under
the harness's traceback; these items show the text alone, and anything
else (the harness failing) the usual way.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest


class CgraphItem(pytest.Item):
    """An item of the plugin's own, reported as ``cgraph`` with a description of its own."""

    #: The exceptions whose text is this item's failure report.
    reported_as_text: ClassVar[tuple[type[BaseException], ...]] = ()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, self.reported_as_text):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "cgraph", None, self.description()

    def description(self) -> str:
        """What the item checks, in a few words (the report's headline)."""
        raise NotImplementedError
