"""``assay view``: a local, read-only web app over the workspace store.

:mod:`.app` builds and serves it; :mod:`.pages` and :mod:`.compare_page` render the
HTML, :mod:`.api` the live view's JSON, :mod:`.queries` holds the SQL, :mod:`.params`
the query-string filters, :mod:`.summary` lays out metrics and :mod:`.transcript`
makes a stored sample readable.
"""

from __future__ import annotations

from assay.view.app import create_app, launch, serve

__all__ = ["create_app", "launch", "serve"]
