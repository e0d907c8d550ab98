"""MT-Bench (Zheng et al. 2023): 80 two-turn questions graded 1-10 by an LLM judge with
FastChat's single-answer prompts: :mod:`.task`, FastChat's files (:mod:`.dataset`),
grading (:mod:`.judging`) and metrics (:mod:`.metrics`, imported by the metric registry,
so this package imports nothing)."""
