"""The agent's side of the memory: what runs inside a LangGraph run.

``graph`` (the prebuilt ``StateGraph``), ``middleware`` (the same memory for
``create_agent``), ``nodes`` (the steps both share), ``tools`` (``user_tag`` and
``summarize``), ``prompt`` (the memory section), ``context`` (the run's user id),
``capture`` (memory writes that do not wait for the model), ``policy`` (what a small
model changes) and ``settings`` (the policy and the app's options, once). The thread's
reducer is ``persistence.messages``.
"""
