"""The run viewer's pages, served by the local web app (:mod:`assay.web`): :mod:`.pages`
and :mod:`.compare_page` render the HTML, :mod:`.search_page` the full-text search,
:mod:`.run_files` a run's options and files, :mod:`.api` the live view's JSON,
:mod:`.params` reads the query-string filters and sort, :mod:`.summary` lays out metrics,
:mod:`.transcript` makes a stored sample readable and :mod:`.sample_extras` adds its
settings, call timeline and highlighted code; the SQL is the store's
(:mod:`assay.store.queries`, :mod:`assay.store.search`).
"""
