"""Reflection: turning a failure into a lesson, off the agent's path.

The worker leases jobs (``worker``, with the queue's rules in ``queue``), asks a model
through litellm (``prompting``, ``gateway``), and every text that may reach a prompt
passes one review (``review``, with ``defuse`` for instructions hidden in tool output).
"""
