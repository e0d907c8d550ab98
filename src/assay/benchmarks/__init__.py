"""Benchmarks: one folder each, registered by name."""

from assay.benchmarks.base import Benchmark, available_benchmarks, benchmark, get_benchmark_class

__all__ = ["Benchmark", "available_benchmarks", "benchmark", "get_benchmark_class"]
