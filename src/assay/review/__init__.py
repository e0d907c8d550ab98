"""Human review of generated problems (``assay review DATA --reviewer NAME``): the page,
served under ``/review/`` by :mod:`assay.web.server`, its dataset ids and the book's export."""
