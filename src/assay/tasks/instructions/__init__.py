"""IFEval and IFBench (verifiable instruction following) as one task, ``flavor`` apart."""
