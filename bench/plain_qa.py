"""The baseline for bench/whole_command.py: the same job as ``assay run qa``, by hand.

Reads a JSONL of questions, sends every question to an OpenAI-compatible endpoint with
plain aiohttp at a fixed concurrency, checks each answer (the ``Answer:`` line against
the target, normalised), writes one JSONL line per sample and prints the accuracy.
Usage: python bench/plain_qa.py DATA.jsonl BASE_URL OUT.jsonl CONCURRENCY
"""

from __future__ import annotations

import asyncio
import json
import re
import sys

import aiohttp

ANSWER = re.compile(r"Answer:\s*(.+)")


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", "", text.lower()).split())


async def main(data: str, base_url: str, out: str, concurrency: int) -> None:
    with open(data, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    sem = asyncio.Semaphore(concurrency)
    results: list[dict] = [{}] * len(rows)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as s:

        async def one(i: int, row: dict) -> None:
            body = {"model": "fake", "max_tokens": 256, "messages": [
                {"role": "user", "content": row["question"] + "\n\nGive only the final answer, "
                 "on one line starting with \"Answer:\"."}]}
            async with sem, s.post(base_url + "/chat/completions", json=body) as r:
                reply = await r.json()
            text = reply["choices"][0]["message"]["content"] or ""
            m = ANSWER.search(text)
            answer = m.group(1) if m else text
            results[i] = {"id": row.get("id", i), "output": text, "answer": answer,
                          "correct": normalise(answer) == normalise(str(row["answer"]))}

        await asyncio.gather(*(one(i, r) for i, r in enumerate(rows)))
    with open(out, "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    print(f"accuracy {sum(r['correct'] for r in results) / len(results):.3f}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
