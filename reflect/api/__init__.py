"""The library API (``Memory``, ``Settings``) and what it offers a person: controls,
the doctor, export and import, progress, learning from past sessions. Its public names are
re-exported by ``reflect``."""
