"""Agents with tools: one tool loop (:mod:`.loop`), the built-in tools (:mod:`.tools`), MCP
servers' tools (:mod:`.mcp`), and the reference agent as a model spec (``agent/react?...``)."""
