"""Layer 6: the ``reflect`` command: its entry point (launch.py), the resident helper that
answers a step's commands warm (resident.py), the commands (main.py, lessons.py, learn.py),
their printing (output.py) and ``make demo`` (demo.py)."""
