"""Reflection: turning a failure into a lesson, off the agent's path.

The worker leases jobs (``worker``, with the queue's rules in ``queue``), asks a model
through litellm (``prompting``, ``gateway``) and has every answer reviewed by capture's
``review`` before it becomes a lesson; it embeds texts (``embedding``, one model loaded at
a time: ``model_lock``) and keeps the store within its bounds (``consolidation``).
"""
