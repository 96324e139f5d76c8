"""Language without a model: tokens and sentences in any script (``text``), each
language's rules as data (``rules``), and which tag values a message states about the
user themself (``attribution``).
"""
