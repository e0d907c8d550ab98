"""The HelloAgents book's names (chapter 12), as thin adapters over assay's core.

::

    from assay.compat import BFCLEvaluator, GAIAEvaluator, LLMJudgeTool

The classes keep the book's arguments and result keys; the work is done by the
core tasks and engine (official scorers, the workspace store, resume, reports).
Nothing in the core imports this package.

An agent may be given as a factory (called once per sample), an object with
``run(prompt) -> str`` (deep-copied per sample; one that cannot be copied is
refused with a message asking for a factory) or a model spec string.
"""

from assay.compat.bfcl import BFCLDataset, BFCLEvaluationTool, BFCLEvaluator
from assay.compat.datagen import AIMEGenerator, HumanVerificationUI, LLMJudgeTool, WinRateTool
from assay.compat.gaia import GAIADataset, GAIAEvaluationTool, GAIAEvaluator

__all__ = ["AIMEGenerator", "BFCLDataset", "BFCLEvaluationTool", "BFCLEvaluator", "GAIADataset",
           "GAIAEvaluationTool", "GAIAEvaluator", "HumanVerificationUI", "LLMJudgeTool",
           "WinRateTool"]
