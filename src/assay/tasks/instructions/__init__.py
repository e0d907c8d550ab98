"""IFEval and IFBench (verifiable instruction following) as one task, ``flavor`` apart:
:mod:`.task`, the official verdicts (:mod:`.scoring`), the NLTK data the checkers read
(:mod:`.resources`) and the registry's metrics (:mod:`.metrics`)."""
