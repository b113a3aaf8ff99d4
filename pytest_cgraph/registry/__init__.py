"""Registries of known bugs: repro dirs, their entries and bugs files, read and edited.

``entries`` reads a registry (a directory of repro files and ``.toml``
entries, grouped into bugs by ``bugs.toml``) and says whether a failure is a
known bug; ``repro_files`` is the files' on-disk form; ``hazards`` and
``severity`` are what a repro's calls and difference say of its bug;
``bugs_file`` edits a bugs file as text. The shipped baselines are data in
``pytest_cgraph/known/``.
"""
