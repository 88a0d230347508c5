"""A deterministic, no-network model: the default without an API key, and the demo's model.

It plays the planner, an executor or the synthesizer (chosen by `request.purpose`) by recognizing
structure in the text it is given: enumerations, sequences, comparisons, lists under a verb,
arithmetic, URLs, email addresses and file names. It never looks answers up in a table, and what
it cannot know (facts about the world) it says it cannot know instead of inventing them.

The request formats it reads are those of planner_ui.agents.prompts (planner_ui.agents.contract
names the blocks): a <task> and a <tools> block for the planner, an <instruction> and a
<context> of <output> blocks for an executor, a <task> and <output> blocks for the synthesizer.

    request.py       reading a request          words.py         roles, slugs, titles
    detect.py        what text asks for         reading.py       sentences, clauses, lists
    planning.py      the plan                   compose.py       Markdown from material
    executing.py     a step's tool calls and answer
    synthesizing.py  the deliverable            provider.py      the Provider class
"""

from .provider import OfflineProvider
from .request import DEFAULT_MODEL

__all__ = ["DEFAULT_MODEL", "OfflineProvider"]
