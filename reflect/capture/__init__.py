"""Capture: everything derived from what a harness hands us before the store sees it.

Reading bounded input (``reading``, ``numbers``), finding the error (``extract``),
benign exits (``benign``), scrubbing (``scrub``), the cause and its family
(``fingerprint``), the scope (``gitconfig``), the heuristic lesson (``heuristics``),
what worked (``resolution``), and captures kept aside when the store is away
(``pending``). ``entry`` puts them together into a failure's rows.
"""
