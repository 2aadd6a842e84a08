"""The research agent: an OpenAI-compatible LLM client, the tool-call protocol, prompts, the ReAct
loop (`loop`; an episode's budgets and record in `episode`, context-window fitting in
`window`), and the runner that records many episodes. It uses the tools of `sieve.tools` through the
small protocol `loop.AgentTools`.
"""

from sieve.agent.episode import Budgets, Episode
from sieve.agent.llm import ChatClient, LLMError
from sieve.agent.loop import Agent, AgentTools

__all__ = ["Agent", "AgentTools", "Budgets", "ChatClient", "Episode", "LLMError"]
