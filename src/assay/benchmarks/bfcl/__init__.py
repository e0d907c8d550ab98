"""BFCL v4: tool-calling evaluation that agrees with the official leaderboard verdict for verdict."""

from assay.benchmarks.bfcl.benchmark import BFCLBenchmark

__all__ = ["BFCLBenchmark"]
