"""The gallery: benchmarks that run offline by name, as YAML entries in
:mod:`assay.tasks.gallery.entries` (schema: :mod:`.entry`); code-backed eval types live beside."""
