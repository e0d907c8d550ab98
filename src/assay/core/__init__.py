"""Core data types shared by every stop on the data path."""

from assay.core.types import (
    Message,
    Outcome,
    Reply,
    Sample,
    SampleResult,
    Score,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = ["Message", "Outcome", "Reply", "Sample", "SampleResult", "Score", "ToolCall",
           "ToolSpec", "Usage"]
