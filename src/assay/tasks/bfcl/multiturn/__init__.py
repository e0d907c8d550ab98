"""BFCL's multi-turn categories: the official simulators, a safe executor, the checker and
the conversation loop."""
