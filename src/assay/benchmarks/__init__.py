"""The built-in tasks with logic of their own: one folder each (registered as entry points
in the ``assay.tasks`` group, see :mod:`assay.tasks.registry`)."""
