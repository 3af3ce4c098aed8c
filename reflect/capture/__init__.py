"""Capture: everything derived from what a harness hands us before the store sees it.

Reading bounded input (``reading``, ``numbers``), finding the error (``extract``),
benign exits (``benign``), scrubbing (``scrub``), the cause and its family
(``fingerprint``), the scope (``gitconfig``), the heuristic lesson (``heuristics``),
what worked (``resolution``), the review of every text that may reach a prompt
(``review``, with ``defuse`` for instructions hidden in tool output). ``entry`` puts them
together into a failure's rows.
"""
