"""The gallery: benchmarks that run offline by name, each one a task in the open task model.

Entries are YAML files in :mod:`assay.tasks.gallery.entries` (schema:
:mod:`assay.tasks.gallery.entry`); eval types with code of their own live in ``code``,
``instructions`` and ``mtbench``."""
