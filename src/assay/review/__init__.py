"""Human review of generated problems: the review page (:mod:`.page`, served under
``/review/`` by :mod:`assay.web.server`), its dataset ids and the book's
``_verifications.json`` export (:mod:`.export`). ``assay review DATA --reviewer NAME``
serves it; the reviews themselves are kept by :class:`assay.store.review.ReviewStore`.
"""
