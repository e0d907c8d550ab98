"""The run viewer's pages, served by the local web app (:mod:`assay.web`): :mod:`.pages`
and :mod:`.compare_page` render the HTML, :mod:`.api` the live view's JSON, :mod:`.params`
reads the query-string filters, :mod:`.summary` lays out metrics and :mod:`.transcript`
makes a stored sample readable; the SQL is the store's (:mod:`assay.store.queries`).
"""
