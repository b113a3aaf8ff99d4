"""How bad a difference is: the four severities a bug is filed under.

A difference's kind says what differs; a reader triaging a run (or a bug
list) asks a coarser question first: is the compiled program silently wrong,
wrong only in metadata, or does it refuse to run, and if it refuses, does
torch say it does not support the program yet? The last is torch's own
known limitation, not a bug it would fix as one. Torch-free, like
:mod:`pytest_cgraph.oracle.difference`.
"""

from __future__ import annotations

import enum
import re

from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.registry.repro_files import BASE_SIGNATURE, FAILURE, header_value


class Severity(str, enum.Enum):
    """A bug's severity; the value is the word a bugs file and a report use."""

    #: Wrong values, mutations or gradients, with no error: the worst, nothing warns.
    SILENT = "silent"
    #: Wrong metadata, aliasing or object identity only (values agree).
    METADATA = "metadata"
    #: The compiled program raises (or hangs, or dies) where eager runs.
    CRASH = "crash"
    #: A crash whose message is torch's own "not supported (yet)": a stated limitation.
    UNSUPPORTED = "unsupported"

    def __str__(self) -> str:
        return self.value


#: Quiet before loud: a bug reached in several ways is filed under its worst.
ORDER = (Severity.SILENT, Severity.METADATA, Severity.CRASH, Severity.UNSUPPORTED)

_BY_KIND = {
    Kind.VALUE: Severity.SILENT,
    Kind.MUTATION: Severity.SILENT,
    Kind.GRAD: Severity.SILENT,
    Kind.STALE_OUTPUT: Severity.SILENT,
    Kind.METADATA: Severity.METADATA,
    Kind.ALIASING: Severity.METADATA,
    Kind.CRASH: Severity.CRASH,
    Kind.TIMEOUT: Severity.CRASH,
}

#: Torch's wording for what it does not handle yet ("aot_autograd() does not
#: yet handle ...", "derivative for set_ is not implemented", "... is not
#: supported", "unsupported operation: ..."), not a Python ``TypeError``'s
#: "unsupported operand type(s)", which is a crash of the program's own code.
_UNSUPPORTED = re.compile(
    r"\bnot (?:yet )?supported\b|\bnot (?:yet )?implemented\b|\bdoes not (?:yet )?handle\b"
    r"|\bdoes not (?:yet |currently )?support\b|\bunsupported operation\b|\bNotImplementedError\b",
    re.IGNORECASE,
)


def severity_of(difference: Difference) -> Severity:
    """The severity of ``difference``: by its kind, and for a crash by torch's wording."""
    severity = _BY_KIND[difference.kind]
    if severity is Severity.CRASH:
        said = " ".join(filter(None, (difference.exception_type, difference.message)))
        if _UNSUPPORTED.search(said):
            return Severity.UNSUPPORTED
    return severity


def worst(severities: list[Severity]) -> Severity:
    """The worst of ``severities`` (by :data:`ORDER`): what a bug of several forms is filed as."""
    return min(severities, key=ORDER.index)


_KINDS = {kind.value.replace(" ", "_"): kind for kind in Kind}


def severity_of_entry(text: str) -> Severity:
    """The severity of the failure an entry (or repro file) was recorded for: its kind
    from its base signature, and a crash's wording from its header's failure line.

    What a bugs file's severity is checked against, and recomputed from when
    a baseline is derived with fewer forms.
    """
    signature = header_value(text, BASE_SIGNATURE) or ""
    kind = _KINDS[signature.split("-")[0]]
    message = header_value(text, FAILURE) if kind is Kind.CRASH else None
    place = Place(Role.COMPILED, name="call")
    return severity_of(Difference(kind, 1, place, exception_type="E", message=message))
