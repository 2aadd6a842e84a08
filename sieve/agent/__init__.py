"""The research agent: an OpenAI-compatible LLM client, the tool-call protocol, prompts, the ReAct
loop, and the runner that records many episodes. It uses the tools of `sieve.tools` through the
small protocol `loop.AgentTools`.
"""

from sieve.agent.llm import ChatClient, LLMError
from sieve.agent.loop import Agent, AgentTools, Budgets, Episode

__all__ = ["Agent", "AgentTools", "Budgets", "ChatClient", "Episode", "LLMError"]
