"""The run viewer's pages, served by the local web app (:mod:`assay.web`); the SQL is
the store's (:mod:`assay.store.queries`, :mod:`assay.store.search`)."""
