"""The ``reflect`` command: its entry point (launch.py), the thin client of a step's process
(client.py), the resident helper that answers a step's commands warm (resident.py), the
commands (main.py, lessons.py, learn.py, rules.py) and ``make demo`` (demo.py)."""
