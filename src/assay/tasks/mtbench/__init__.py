"""MT-Bench (Zheng et al. 2023), graded as FastChat does; imports nothing (the metric
registry imports :mod:`.metrics`)."""
