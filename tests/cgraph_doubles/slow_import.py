"""A setup module that takes seconds to import, as torch's compile stack does in a
freshly spawned child on a busy machine: a checking child must be ready before the
first program's time limit starts."""

from __future__ import annotations

import time

IMPORT_SECONDS = 6.0

time.sleep(IMPORT_SECONDS)
