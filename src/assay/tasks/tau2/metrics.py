"""The metric τ²-bench reports, registered so a plan naming the planned task names it."""

from __future__ import annotations

from assay.metrics.registry import task_metric

task_metric("tau2_pass_hat_1", "tau2", aliases=("tau2", "tau2_pass_1"), category="agent",
            description="τ²-bench pass^1: the share of tasks whose episode earns the full reward "
                        "(final database state and required actions), averaged over trials; "
                        "pass^k = C(c, k) / C(n, k) per task for c successes in n trials.",
            usage="Computed by the tau2 task only, which needs a user simulator and the domain "
                  "tools: planned, not in assay yet.",
            reference="sierra-research/tau2-bench")
