"""The gallery: benchmarks that run offline by name, each one a task in the open task model.

Entries are YAML files in :mod:`assay.tasks.gallery.entries` (see :mod:`assay.tasks.gallery.entry` for
the schema); the tasks behind the eval types that need code of their own live in the
subpackages (``code`` for HumanEval/MBPP, ``instructions`` for IFEval/IFBench,
``mtbench`` for MT-Bench).
"""
