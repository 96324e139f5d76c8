"""The fuzzy tier's writer: ``summarizer`` (a transcript to checked, grounded items),
``reconcile`` (new items against stored ones), ``jobs`` (``Summarization``: a user's
summarization, the queue's settling, the sweep, the offline job) and ``worker``
(``SummaryWorker``: the offline job as asyncio workers).
"""
