"""BFCL v4 agentic categories: memory (kv, vector, rec_sum) and web search (base, no_snippet)."""
