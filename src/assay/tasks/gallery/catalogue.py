"""The catalogue as a task source: its entries are tasks by name. The registry finds it by
entry point and never imports it (the catalogue uses the registry, not the other way)."""

from __future__ import annotations

from typing import Any

from assay.errors import ConfigError
from assay.tasks.gallery.entry import all_entries, find_entry
from assay.tasks.gallery.task import GalleryFactory


class Catalogue:
    """The shipped entries as a task source (:class:`assay.tasks.registry.TaskSource`)."""

    label = "gallery"

    def runnable(self) -> dict[str, Any]:
        """The ready entries by name (a planned entry is listed, not run)."""
        return {name: GalleryFactory(entry) for name, entry in all_entries().items()
                if entry.readiness.status == "ready"}

    def find(self, name: str) -> tuple[str, Any] | None:
        """The entry ``name`` or an alias names (case-insensitive); an error for one planned."""
        entry = find_entry(name)
        if entry is None:
            return None
        if entry.readiness.status == "planned":
            raise ConfigError(f"{entry.name} is in the gallery but not runnable yet: "
                              f"{entry.readiness.note or 'planned'}")
        return entry.name, GalleryFactory(entry)

    def names(self) -> list[str]:
        return [n for entry in all_entries().values() for n in entry.names]


#: the ``gallery`` entry point of ``assay.task_sources``
CATALOGUE = Catalogue()
