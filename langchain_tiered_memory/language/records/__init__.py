"""One module per language, each defining ``LANGUAGE`` (a
:class:`~langchain_tiered_memory.language.record.Language`) or ``LANGUAGES`` (several):
:func:`~langchain_tiered_memory.language.registry.languages` finds them all. Adding a
language is adding a module here (``spanish.py`` is a full record to copy).
"""
