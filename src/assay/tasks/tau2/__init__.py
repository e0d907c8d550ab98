"""τ²-bench (planned): the gallery lists it so plans can name it; only the metric it will
report is registered so far (:mod:`assay.tasks.tau2.metrics`)."""
