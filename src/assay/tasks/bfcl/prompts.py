"""What a BFCL model sees: the official prompt-mode system prompt (default format
``ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=plaintext&style=classic``),
language hints, FC tools, the id sort key; byte for byte the official (reference/bfcl.md §2).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from assay.core.types import ToolCall, ToolSpec

__all__ = ["add_language_hints", "fc_result", "official_sort_key", "prompt_messages",
           "system_prompt", "to_openai_tools", "tool_specs"]

# The default ("classic", plain text, python return format, json function docs) prompt.
# Quirks kept: no space after "composing functions.", two spaces before "You SHOULD NOT"
# (an empty parameter-type sentence sits between them), lower-case "json", one trailing
# newline after the JSON list.
_PROMPT_HEAD = (
    "You are an expert in composing functions."
    "You are given a question and a set of possible functions. Based on the question, you "
    "will need to make one or more function/tool calls to achieve the purpose. If none of "
    "the functions can be used, point it out. If the given question lacks the parameters "
    "required by the function, also point it out."
    "\n\n"
    "You should only return the function calls in your response.\n\nIf you decide to invoke "
    "any of the function(s), you MUST put it in the format of "
    "[func_name1(params_name1=params_value1, params_name2=params_value2...), "
    "func_name2(params)].  You SHOULD NOT include any other text in the response."
    "\n\n"
    "At each turn, you should try your best to complete the tasks requested by the user "
    "within the current turn. Continue to output functions to call until you have fulfilled "
    "the user's request to the best of your ability. Once you have no more functions to "
    "call, the system will consider the current turn complete and proceed to the next turn "
    "or task."
    "\n\n"
    "Here is a list of functions in json format that you can invoke.\n"
)

_DESCRIPTION_HINT = {
    "python": " Note that the provided function is in Python 3 syntax.",
    "java": " Note that the provided function is in Java 8 SDK syntax.",
    "javascript": " Note that the provided function is in JavaScript syntax.",
}
_LANGUAGE_NAME = {"java": "Java", "javascript": "JavaScript"}
_LIST_TYPES = {"java": ("ArrayList", "Array"), "javascript": ("array",)}

# Gorilla type -> JSON Schema type (the official GORILLA_TO_OPENAPI table).
_OPENAPI_TYPE = {
    "integer": "integer", "byte": "integer", "short": "integer", "long": "integer",
    "Bigint": "integer",
    "number": "number", "float": "number", "double": "number",
    "string": "string", "String": "string", "any": "string", "Any": "string",
    "char": "string",
    "boolean": "boolean", "bool": "boolean",
    "array": "array", "list": "array", "tuple": "array", "Array": "array",
    "ArrayList": "array", "Queue": "array", "Stack": "array",
    "dict": "object", "object": "object", "HashMap": "object", "Hashtable": "object",
}


def system_prompt(functions: list[dict]) -> str:
    """The official default prompt-mode system prompt for these (hinted) function docs."""
    return _PROMPT_HEAD + json.dumps(functions, indent=4) + "\n"


def add_language_hints(functions: list[dict], language: str) -> list[dict]:
    """Function docs (a deep copy) as shown at inference time, with the official language
    hints: a note on every description; for Java and JavaScript every parameter becomes
    ``"string"`` with a note on its type, list types lose ``items`` and JavaScript dicts
    ``properties`` (both noted)."""
    if language not in _DESCRIPTION_HINT:
        raise ValueError(f"unsupported BFCL language {language!r}")
    docs = copy.deepcopy(functions)
    for doc in docs:
        doc["description"] = doc["description"] + _DESCRIPTION_HINT[language]
        if language == "python":
            continue
        lang_name = _LANGUAGE_NAME[language]
        for param in doc["parameters"]["properties"].values():
            kind = param["type"]
            if kind == "any":
                note = (f" This parameter can be of any type of {lang_name} object in string "
                        "representation.")
            else:
                note = f" This is {lang_name} {kind} type parameter in string representation."
            param["description"] += note
            if kind in _LIST_TYPES[language]:
                param["description"] += (
                    f" The list elements are of type {param['items']['type']}; they are not in "
                    "string representation."
                )
                del param["items"]
            if language == "javascript" and kind == "dict" and "properties" in param:
                param["description"] += (
                    " The dictionary entries have the following schema; they are not in string "
                    f"representation. {json.dumps(param['properties'])}"
                )
                del param["properties"]
            param["type"] = "string"
    return docs


def prompt_messages(question_turn: list[dict], functions_with_hints: list[dict]) -> list[dict]:
    """The first turn's messages (a new copy) with the official system prompt as a new first
    ``system`` message, or prepended to a leading one with ``"\\n\\n"`` between."""
    if not question_turn:
        raise ValueError("a BFCL question turn needs at least one message")
    messages = copy.deepcopy(question_turn)
    prompt = system_prompt(functions_with_hints)
    if messages[0]["role"] == "system":
        messages[0]["content"] = prompt + "\n\n" + messages[0]["content"]
    else:
        messages.insert(0, {"role": "system", "content": prompt})
    return messages


def _to_schema_properties(properties: dict[str, Any]) -> dict[str, Any]:
    """Map gorilla property types to JSON Schema in place, with the official recursion."""
    for prop in properties.values():
        if "type" not in prop:
            prop["type"] = "string"
        else:
            if prop["type"] == "float":
                prop["format"] = "float"
                prop["description"] += " This is a float type value."
            prop["type"] = _OPENAPI_TYPE.get(prop["type"], "string")
        if prop["type"] not in ("array", "object"):
            continue
        if "properties" in prop:
            _to_schema_properties(prop["properties"])
        elif "items" in prop:
            items = prop["items"]
            items["type"] = _OPENAPI_TYPE[items["type"]]  # an unknown type fails, as officially
            if items["type"] == "array" and "items" in items:
                items["items"]["type"] = _OPENAPI_TYPE[items["items"]["type"]]
            elif items["type"] == "object" and "properties" in items:
                _to_schema_properties(items["properties"])
    return properties


def to_openai_tools(functions_with_hints: list[dict], *,
                    underscore_to_dot: bool = True) -> list[dict]:
    """OpenAI chat-completions tools, as the official ``convert_to_tool`` builds them: with
    ``underscore_to_dot`` (official for OpenAI-style FC) dots in names become ``_``, as tool
    names must match ``^[a-zA-Z0-9_-]{1,64}$``; ``float`` adds ``"format": "float"`` and a note."""
    tools = []
    for doc in copy.deepcopy(functions_with_hints):
        if underscore_to_dot:
            doc["name"] = doc["name"].replace(".", "_")
        doc["parameters"]["type"] = "object"
        doc["parameters"]["properties"] = _to_schema_properties(doc["parameters"]["properties"])
        tools.append({"type": "function", "function": doc})
    return tools


def tool_specs(functions_with_hints: list[dict], *, underscore_to_dot: bool) -> list[ToolSpec]:
    """:func:`to_openai_tools` as the engine's tool specs."""
    return [ToolSpec(t["function"]["name"], t["function"].get("description", ""),
                     t["function"].get("parameters") or {"type": "object", "properties": {}})
            for t in to_openai_tools(functions_with_hints, underscore_to_dot=underscore_to_dot)]


def fc_result(tool_calls: list[ToolCall]) -> list[dict[str, Any]]:
    """Tool calls in the official FC result-file form ``[{name: json_args}]``."""
    return [{c.name: c.arguments.get("__unparsed_arguments__")
             if "__unparsed_arguments__" in c.arguments else json.dumps(c.arguments)}
            for c in tool_calls]


def official_sort_key(entry_id: str) -> tuple[int, str, int]:
    """The official result/entry sort key ``(priority, category, index)`` of a test id."""
    base = entry_id.split(":")[0]
    if "_" not in base:
        raise ValueError(f"not a BFCL test id: {entry_id!r}")
    category, index = base.rsplit("_", 1)
    if "-" in index:
        if index.count("-") != 2:
            raise ValueError(f"invalid BFCL test id index: {entry_id!r}")
        index = index.split("-")[0]
    if "prereq" in category:
        priority = 0
    elif "web_search" in category:
        priority = 1
    elif not ("multi_turn" in category or "memory" in category):
        priority = 2
    elif "multi_turn" in category:
        priority = 3
    else:
        priority = 4
    return (priority, category, int(index))
