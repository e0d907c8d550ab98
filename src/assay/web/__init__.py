"""The local web app on 127.0.0.1: the run viewer (``assay view``) and the review page
(``assay review``), one server for both (:mod:`.server`), kept local and read-only outside
the review API by :mod:`.security`, sharing :mod:`.state` (store, templates, static files).
"""
