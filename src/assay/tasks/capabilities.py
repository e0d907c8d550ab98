"""The capabilities a task can be a standard measure of, and how standard it is: a catalogue
entry's ``measures`` gives each with a reason and a **standing**: ``canonical`` (reported first:
HumanEval for code, GSM8K for math), ``supporting`` (beside those) or ``niche`` (when asked for
or nothing better runs). The planner ranks by this before words, so "broad academic knowledge"
gets MMLU. :data:`CAPABILITIES`: each one's meaning and the phrases users write for it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

__all__ = ["CAPABILITIES", "PRIOR", "STANDINGS", "Capability", "Measure", "Standing",
           "capabilities_in"]

Standing = Literal["canonical", "supporting", "niche"]
STANDINGS: tuple[str, ...] = ("canonical", "supporting", "niche")
#: the prior a standing gives a task for a capability it measures (the planner mixes it
#: with the normalised BM25 score of the task's words)
PRIOR: dict[str, float] = {"canonical": 1.0, "supporting": 0.6, "niche": 0.3}


@dataclass(frozen=True)
class Capability:
    """One capability of the vocabulary: what it means, and how users say it."""

    name: str
    describe: str
    phrases: tuple[str, ...]


def _cap(name: str, describe: str, phrases: str) -> Capability:
    return Capability(name, describe, tuple(p.strip() for p in phrases.split("|") if p.strip()))


#: the capabilities, by name (the order is the one ``assay list tasks --capability`` shows)
CAPABILITIES: dict[str, Capability] = {c.name: c for c in (
    _cap("knowledge", "broad academic knowledge across many subjects, as multiple choice",
         "knowledge|academic knowledge|world knowledge|general knowledge|subjects|many "
         "subjects|across subjects|multitask|multiple choice knowledge|exam questions|"
         "school exams|university exams|college level|professional exams|humanities|stem "
         "subjects|knowledgeable|知识|学科|多学科|考试|"
         "学术知识|世界知识|通用知识|百科知识|知识面|知识广度|知识储备|"
         "学科知识|多个学科|各个学科|各学科|跨学科|综合知识|多任务|"
         "多项选择|单项选择|选择题|考试题|考题|高考|大学考试|专业考试|"
         "资格考试|大学水平|大学程度|人文学科|人文社科|理工科|"
         "stem学科"),
    _cap("factual_qa", "open-domain factual questions with short answers (trivia, "
         "closed-book QA)",
         "trivia|factual|facts|factoid|short answer|closed-book|closed book|open-domain|"
         "open domain|quiz|jeopardy|general facts|事实|常识问答|"
         "事实性|事实类|事实问答|知识问答|开放域|开放领域|闭卷|"
         "简短回答|简答题|短答案|冷知识|小测验|知识竞赛|问答竞赛|"
         "危险边缘"),
    _cap("math", "math word problems and competition mathematics, graded by the final answer",
         "math|maths|mathematics|mathematical|arithmetic|algebra|calculus|geometry|word "
         "problem|word problems|grade-school|grade school|competition math|olympiad|"
         "quantitative|calculation|calculations|problem solving|数学|算术|应用题|计算|"
         "数学应用题|数学题|数学能力|数学推理|数学竞赛|竞赛数学|奥数|"
         "奥林匹克数学|小学数学|初中数学|中学数学|高中数学|代数|微积分|"
         "几何|方程|概率题|四则运算|计算题|数值计算|定量分析|定量推理|"
         "解题能力|解数学"),
    _cap("code", "writing programs from a description, judged by running unit tests",
         "code|coding|program|programs|programming|python|software|code generation|"
         "generate code|write code|writing code|unit tests|developer|developers|"
         "coder|copilot|scripts|编程|代码|写代码|程序|"
         "代码生成|生成代码|编写代码|写程序|编写程序|程序设计|程序生成|"
         "编程能力|编码能力|编程题|算法题|单元测试|软件开发|软件工程|"
         "开发者|开发人员|程序员|码农|脚本|写脚本|python编程|"
         "代码补全|代码助手"),
    _cap("instruction_following", "following explicit, verifiable instructions (format, "
         "length, keywords)",
         "instruction|instructions|instruction following|instruction-following|follow "
         "instructions|follows instructions|following instructions|format constraints|"
         "formatting|constraints|verifiable|word limit|bullet points|json format|obey|"
         "指令|遵循|"
         "指令遵循|遵循指令|指令跟随|遵从指令|遵守指令|听从指令|"
         "按照指令|按指令|执行指令|指令理解|格式约束|格式要求|输出格式|"
         "约束条件|可验证|字数限制|字数要求|项目符号|要点列表|"
         "json格式|服从"),
    _cap("chat", "open-ended, multi-turn chat quality as an LLM judge rates it",
         "chat|chatbot|chat quality|conversation|conversations|conversational|dialogue|"
         "dialog|multi-turn|multi turn|multiturn|helpfulness|helpful|assistant quality|"
         "open-ended|open ended|llm judge|llm-as-a-judge|judge model|rated by|writing quality|"
         "writers|writer|novelist|novelists|creative writing|story writing|long-form writing|写作|小说|写小说|创意写作|"
         "对话|聊天|多轮|"
         "多轮对话|对话能力|对话质量|聊天机器人|聊天质量|会话|多回合|"
         "闲聊|有用性|帮助性|有帮助|助手质量|回复质量|开放式|"
         "开放性问题|开放问题|裁判模型|评委模型|评判模型|llm裁判|"
         "llm评委|大模型评判|写作质量|文笔"),
    _cap("tool_use", "calling functions and tools with the right arguments",
         "tool|tools|tool use|tool calling|tool-calling|function call|function calls|"
         "function calling|function-calling|api call|api calls|call apis|calling apis|"
         "apis|json arguments|工具|函数调用|"
         "工具调用|工具使用|使用工具|调用工具|工具学习|函数调用能力|"
         "调用函数|api调用|调用api|接口调用|调用接口|json参数|"
         "插件调用|使用插件"),
    _cap("agent", "multi-step assistant tasks: planning, tools, browsing, a user to serve",
         "agent|agents|agentic|assistant tasks|web browsing|browse|browsing|multi-step|"
         "multi step|autonomous|general assistant|customer service|customer-service|support "
         "agent|long-horizon|智能体|代理|多步|"
         "智能代理|agent能力|agent任务|助手任务|网页浏览|"
         "浏览网页|网络浏览|上网搜索|多步骤|多步任务|多步规划|自主完成|"
         "自主执行|自主智能体|通用助手|客服|客户服务|客服代理|长程任务|"
         "web search|search the web|searches the web|read files|reads files|attachments|attachment|excel|spreadsheet|spreadsheets|pdf|pdfs|airline|retail|上网|联网|附件|表格文件|网上搜索|"
         "长周期任务|长时程|任务规划|规划能力"),
    _cap("nli", "natural language inference: whether one sentence follows from another",
         "nli|natural language inference|entailment|entail|entails|contradiction|"
         "contradicts|follows from|textual inference|premise|hypothesis|recognizing textual|"
         "蕴含|推断|自然语言推理|"
         "文本蕴含|蕴含关系|蕴涵|自然语言推断|文本推理|能否推出|"
         "是否能推出|可以推出|能推出|矛盾关系|是否矛盾|相互矛盾|"
         "中立关系|前提和假设|前提与假设|前提句|假设句|句话推出|句推出|"
         "前提推出|推出结论"),
    _cap("reading", "reading comprehension: answering from a given passage",
         "reading|reading comprehension|comprehension|passage|passages|paragraph|"
         "paragraphs|documents|document|extractive|from the text|given text|"
         "article|articles|阅读|文章|"
         "pasted paragraph|given paragraph|yes/no questions|yes or no questions|over a passage|"
         "answer questions over|questions over|questions about a document|contracts|"
         "legal documents|reports|manuals|"
         "阅读理解|篇章|段落|短文|文档|原文|文中|根据文章|根据材料|"
         "给定文本|给定段落|抽取式|片段抽取"),
    _cap("commonsense", "everyday physical and social common sense",
         "commonsense|common sense|common-sense|everyday|physical intuition|physical world|"
         "social situations|social intelligence|what happens next|plausible|intuition|"
         "sentence completion|pronoun|常识|"
         "常识推理|常识理解|日常生活|日常情境|日常场景|物理直觉|"
         "物理常识|物理世界|社会常识|社交常识|社会情境|社交情境|"
         "robot|robots|robotics|household|household chores|chores|home robot|everyday objects|physical reasoning|机器人|家务|家用机器人|"
         "社交智能|社会智能|接下来会发生|接下来发生|之后会发生|"
         "下一步会发生|接下来会怎样|接下来会怎么样|最合理|看似合理|直觉|"
         "句子补全|补全句子|句子续写|代词消解|指代消解|指代"),
    _cap("science", "school and college science questions (physics, chemistry, biology)",
         "science|scientific|physics|chemistry|biology|earth science|grade-school science|"
         "school science|science exam|science questions|科学|物理|化学|生物|"
         "科学问题|科学题|科学考试|科学知识|自然科学|地球科学|小学科学|"
         "中学科学|理科|理化生|天文"),
    _cap("science_research", "research-level science: lab protocols, databases, papers",
         "research-level|research questions|scientific research|lab|laboratory|protocols|"
         "protocol|biomedical|scientific literature|scientific papers|bioinformatics|"
         "literature|research papers|paper reading|read papers|reading papers|literature review|文献|读论文|"
         "科研|"
         "科学研究|研究级|研究水平|研究问题|实验室|实验方案|实验流程|"
         "实验步骤|实验协议|生物医学|科学文献|学术论文|科研论文|论文|"
         "生物信息|科学数据库|生物数据库"),
    _cap("medical", "medical knowledge: licensing exams and clinical questions",
         "medical|medicine|clinical|health|healthcare|doctor|doctors|usmle|patients|"
         "physician|nursing|diagnosis|医学|医疗|医生|"
         "医学问答|医疗问答|医学知识|医学考试|执业医师|医师|医药|药学|"
         "临床|健康|卫生|患者|病人|护理|护士|疾病|诊断疾病|疾病诊断|"
         "症状|中医"),
    _cap("reasoning", "logical and symbolic reasoning: deduction, patterns, manipulation",
         "reasoning|logic|logical|puzzle|puzzles|deduction|deductive|syllogism|symbolic|"
         "pattern|patterns|string manipulation|推理|逻辑|"
         "逻辑推理|推理能力|演绎|三段论|谜题|智力题|逻辑题|益智|解谜|"
         "符号推理|符号操作|找规律|规律|模式识别|字符串操作|字符串处理"),
    _cap("language", "language understanding of the GLUE kind",
         "language understanding|linguistic|glue|superglue|nlu|grammar|sentence "
         "classification|语言理解|"
         "自然语言理解|语义理解|语言学|语言能力|语法|句子分类|文本分类|"
         "glue基准"),
    _cap("sentiment", "sentiment: whether a text is positive or negative",
         "sentiment|sentiments|positive or negative|opinion|opinions|reviews|movie reviews|"
         "polarity|情感|情绪|"
         "情感分析|情感分类|情感倾向|情感极性|极性|褒贬|正面还是负面|"
         "正面或负面|正面负面|积极还是消极|积极或消极|正负面|观点|"
         "影评|电影评论|商品评论|用户评论|好评|差评"),
    _cap("paraphrase", "paraphrase: whether two sentences mean the same",
         "paraphrase|paraphrases|paraphrasing|same meaning|semantic equivalence|"
         "duplicate questions|复述|同义|"
         "改写|释义|转述|同义改写|同义句|意思相同|意思一样|含义相同|"
         "相同含义|语义相同|语义等价|语义一致|是否重复|重复问题|"
         "问题去重|意思是否相同|意思是否一样|意思相近|同一个意思|"
         "语义是否相同|语义是否等价|语义是否一致|是否同义"),
    _cap("language_modeling", "predicting the next word of a text (language modelling)",
         "language modeling|language modelling|next word|last word|"
         "predict the word|word prediction|cloze|long-range context|"
         "perplexity|bits per byte|bits-per-byte|bpb|base model|base models|pretrained model|pre-trained model|pretraining|pre-training|next-token|next token|基座模型|预训练|"
         "语言建模|下一个词|下一个字|下个词|预测词|词预测|预测下一个|"
         "最后一个词|最后一个字|完形填空|困惑度|长距离上下文|长程上下文|"
         "长上下文|续写文本"),
    _cap("data_quality", "the quality of data a model generates (problems, answers): "
         "judged on a rubric, against real data, its answers verified",
         "generated problems|generates problems|generate problems|generating problems|"
         "problems it generates|problems it makes|make problems|makes problems|make math "
         "problems|makes math problems|generates math problems|write problems|writes "
         "problems|writes math problems|authors problems|creates problems|problem "
         "generation|question generation|generated questions|synthetic data|synthetic-data|"
         "data generation|data-gen|datagen|generated data|quality of the problems|quality of "
         "problems|problem quality|win rate|rubric|aime-style|出题|生成的题目|生成题目|"
         "题目质量|合成数据|数据生成|生成数据"),
    _cap("custom_data", "your own questions and answers: a JSONL/CSV file or a Hub dataset",
         "my own data|own data|my data|our data|own dataset|my dataset|our dataset|custom "
         "data|custom dataset|custom eval|jsonl|csv|question/answer pairs|qa pairs|"
         "自己的数据|我们的数据|自定义数据"),
    _cap("truthfulness", "avoiding falsehoods and abstaining when unsure, TruthfulQA- and "
         "SimpleQA-style (no gallery task yet)",
         "truthful|truthfulness|truthfulqa|simpleqa|hallucinate|hallucinates|hallucination|"
         "hallucinations|i don't know|abstain|abstention|making things up|makes things up|"
         "fabricate|fabricates|真实性|幻觉|胡编|编造|不知道"),
    _cap("hard_reasoning", "hard reasoning: graduate-level and expert questions (GPQA, "
         "MMLU-Pro, BBH; no gallery task yet)",
         "gpqa|mmlu-pro|mmlu pro|bbh|big-bench hard|big bench hard|graduate-level|graduate "
         "level|google-proof|expert-level|phd-level|musr|研究生水平|专家级"),
    _cap("long_context", "long-context use over very long inputs (no gallery task yet)",
         "long context|long-context|long documents|long document|100 pages|hundreds of pages|"
         "100,000 tokens|100k tokens|128k|needle in a haystack|needle-in-a-haystack|longbench|"
         "ruler|long contracts|长文本|长上下文|超长"),
    _cap("multilingual_math", "competition math in languages other than English (MMATH's "
         "ten languages)",
         "multilingual math|math in many languages|math in many language|math in other "
         "languages|math in several languages|mathematics in many languages|mgsm|mmath|"
         "多语言数学|多种语言的数学|多语种数学"),
    _cap("multilingual", "ability in languages other than English beyond math (no gallery "
         "task yet; MMATH covers competition math)",
         "multilingual|many languages|many language|other languages|several languages|"
         "non-english|cross-lingual|mgsm|xnli|c-eval|cmmlu|gaokao|german language|in german|"
         "in spanish|in french|in japanese|多语言|多种语言|高考|中文知识|中文能力"),
    _cap("safety", "refusing harm, toxicity and bias (no gallery task yet)",
         "safety|safe|harmful|harm|toxicity|toxic|jailbreak|jailbreaks|refusal|refuse|bias|"
         "biased|red team|red-teaming|"
         "安全|有害|偏见|"
         "安全性|有害内容|危害|毒性|有毒|越狱|越狱攻击|拒答|拒绝回答|"
         "拒绝|歧视|刻板印象|红队|红队测试|诚实"),
)}


class Measure(BaseModel):
    """One capability a task is a measure of: ``{capability, standing, why}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    capability: str
    standing: Standing
    why: str

    @field_validator("capability")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in CAPABILITIES:
            raise ValueError(f"unknown capability {v!r}; choose from {', '.join(CAPABILITIES)}")
        return v

    @field_validator("why")
    @classmethod
    def _one_line(cls, v: str) -> str:
        v = " ".join(v.split())
        if len(v) < 15:
            raise ValueError("say in one line why the field uses it (15 characters or more)")
        return v


def _spans(text: str, phrase: str) -> list[tuple[int, int]]:
    """Where ``phrase`` occurs in lower-cased ``text``: as whole words (ASCII word edges, so
    "评测agent能力" holds "agent"), or anywhere for a CJK phrase."""
    if re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", phrase):
        pattern = re.escape(phrase)
    else:
        pattern = rf"(?<![A-Za-z0-9_-]){re.escape(phrase)}(?![A-Za-z0-9_-])"
    return [m.span() for m in re.finditer(pattern, text)]


def capabilities_in(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The capabilities ``text`` asks about (vocabulary order) and the phrases that said so.
    Phrases are read leftmost-longest, so "常识推理能力" is commonsense, not also reasoning."""
    low = " ".join(text.lower().split())
    found = sorted(((start, -(end - start), end, cap.name, p)
                    for cap in CAPABILITIES.values() for p in cap.phrases
                    for start, end in _spans(low, p)))
    taken: list[tuple[int, int]] = []
    hits: dict[str, list[str]] = {}
    for start, _, end, cap, phrase in found:
        if any(start < e and s < end for s, e in taken):
            continue
        taken.append((start, end))
        if phrase not in hits.setdefault(cap, []):
            hits[cap].append(phrase)
    return [c for c in CAPABILITIES if c in hits], hits
