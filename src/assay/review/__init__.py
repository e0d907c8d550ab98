"""Human review of generated problems: a local web page and the reviews it records.

``assay review DATA --reviewer NAME`` runs :func:`launch`; reviews live in the
workspace database (:class:`ReviewStore`) and export to the book's
``_verifications.json`` shape.
"""

from assay.review.app import create_app, launch, serve
from assay.review.inputs import load_judge_scores
from assay.review.mathml import render_math, tex_to_mathml
from assay.review.pairing import PairedScores
from assay.review.records import (
    DECIDED,
    DIMENSIONS,
    STATUSES,
    Review,
    ReviewError,
    ReviewEvent,
)
from assay.review.store import ReviewStore, dataset_id, dataset_id_for_file

__all__ = [
    "DECIDED",
    "DIMENSIONS",
    "STATUSES",
    "PairedScores",
    "Review",
    "ReviewError",
    "ReviewEvent",
    "ReviewStore",
    "create_app",
    "dataset_id",
    "dataset_id_for_file",
    "launch",
    "load_judge_scores",
    "render_math",
    "serve",
    "tex_to_mathml",
]
