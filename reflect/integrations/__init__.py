"""Where agents run: Claude Code and Codex hooks, mini-swe-agent, an MCP server, ``reflect run``.

Each integration calls the public ``Memory`` API only and never breaks its client:
it exits 0 (or returns), answers in the client's format, and bounds its time.
"""
