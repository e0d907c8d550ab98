"""The agentic categories' fixed texts, exactly as ``bfcl_eval/constants/default_prompts.py``
(2026.3.23) has them (the tests compare them), and the memory system prompt as
``model_handler/utils.py:610-650`` builds it."""

from __future__ import annotations

from typing import Any

__all__ = ["AGENTIC_FORMAT_PROMPT", "MEMORY_AGENT_SETTINGS", "MEMORY_INSTRUCTION_CORE_ARCHIVAL",
           "MEMORY_INSTRUCTION_UNIFIED", "add_memory_instruction"]

#: ``ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT`` (default_prompts.py:79), the
#: system message ``utils.py:755-769`` inserts at ``question[0][0]`` of every scored
#: memory and web-search entry (not of memory prerequisites)
AGENTIC_FORMAT_PROMPT = """For your final answer to the user, you must respond in this format: {'answer': A short and precise answer to the question, 'context': A brief explanation of how you arrived at this answer or why it is correct}. If you do not know the answer, respond with {'answer': 'I do not know', 'context': 'I do not know'}. If you think the question cannot be properly answered, response with {'answer': 'I cannot answer this question', 'context': A short reason explaining why this question cannot be answered}.
"""

#: ``MEMORY_AGENT_SETTINGS`` (default_prompts.py:82-88)
MEMORY_AGENT_SETTINGS = {
    "student": "You are an academic-support assistant for college student. Remember key personal and academic details discussed across sessions, and draw on them to answer questions or give guidance.",  # noqa: E501
    "customer": "You are a general customer support assistant for an e-commerce platform. Your task is to understand and remember information that can be used to provide information about user inquiries, preferences, and offer consistent, helpful assistance over multiple interactions.",  # noqa: E501
    "finance": "You are a high-level executive assistant supporting a senior finance professional. Retain and synthesize both personal and professional information including facts, goals, prior decisions, and family life across sessions to provide strategic, context-rich guidance and continuity.",  # noqa: E501
    "healthcare": "You are a healthcare assistant supporting a patient across appointments. Retain essential medical history, treatment plans, and personal preferences to offer coherent, context-aware guidance and reminders.",  # noqa: E501
    "notetaker": "You are a personal organization assistant. Capture key information from conversations, like tasks, deadlines, and preferences, and use it to give reliable reminders and answers in future sessions.",  # noqa: E501
}

#: ``MEMORY_BACKEND_INSTRUCTION_CORE_ARCHIVAL`` (kv and vector)
MEMORY_INSTRUCTION_CORE_ARCHIVAL = """{scenario_setting}

You have access to an advanced memory system, consisting of two memory types 'Core Memory' and 'Archival Memory'. Both type of memory is persistent across multiple conversations with the user, and can be accessed in a later interactions. You should actively manage your memory data to keep track of important information, ensure that it is up-to-date and easy to retrieve to provide personalized responses to the user later.

The Core memory is limited in size, but always visible to you in context. The Archival Memory has a much larger capacity, but will be held outside of your immediate context due to its size.

Here is the content of your Core Memory from previous interactions:
{memory_content}
"""  # noqa: E501

#: ``MEMORY_BACKEND_INSTRUCTION_UNIFIED`` (rec_sum)
MEMORY_INSTRUCTION_UNIFIED = """{scenario_setting}

You have access to an advanced memory system, which is persistent across multiple conversations with the user, and can be accessed in a later interactions. You should actively manage your memory data to keep track of important information, ensure that it is up-to-date and easy to retrieve to provide personalized responses to the user later.

Here is the content of your memory system from previous interactions:
{memory_content}
"""  # noqa: E501


def add_memory_instruction(questions: list[list[dict[str, Any]]], category: str,
                           scenario: str, memory_content: str) -> list[list[dict[str, Any]]]:
    """``add_memory_instruction_system_prompt`` (model_handler/utils.py:610-650), on a copy:
    the prompt (with the backend's core memory dump) is prepended with ``"\\n\\n"`` to the
    first turn's leading system message, else inserted as the first message."""
    if not questions:
        raise ValueError("a memory entry needs at least one turn")
    template = (MEMORY_INSTRUCTION_UNIFIED if "rec_sum" in category
                else MEMORY_INSTRUCTION_CORE_ARCHIVAL)
    prompt = template.format(scenario_setting=MEMORY_AGENT_SETTINGS[scenario],
                             memory_content=memory_content)
    out = [[dict(m) for m in turn] for turn in questions]
    first = out[0]
    if first and first[0]["role"] == "system":
        first[0]["content"] = prompt + "\n\n" + first[0]["content"]
    else:
        first.insert(0, {"role": "system", "content": prompt})
    return out
