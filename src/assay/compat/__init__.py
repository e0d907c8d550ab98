"""The HelloAgents book's names (chapter 12), as thin adapters over assay's core
(``from assay.compat import BFCLEvaluator, GAIAEvaluator, LLMJudgeTool``): the book's
arguments and result keys, the work done by the core tasks and engine; nothing in the core
imports this package. An agent is a factory (called once per sample), an object with
``run(prompt) -> str`` (deep-copied per sample, else refused asking for a factory) or a
model spec string.
"""

from assay.compat.bfcl import BFCLDataset, BFCLEvaluationTool, BFCLEvaluator
from assay.compat.datagen import AIMEGenerator, HumanVerificationUI, LLMJudgeTool, WinRateTool
from assay.compat.gaia import GAIADataset, GAIAEvaluationTool, GAIAEvaluator

__all__ = ["AIMEGenerator", "BFCLDataset", "BFCLEvaluationTool", "BFCLEvaluator", "GAIADataset",
           "GAIAEvaluationTool", "GAIAEvaluator", "HumanVerificationUI", "LLMJudgeTool",
           "WinRateTool"]
