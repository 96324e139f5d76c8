"""Language without a model: each language as one record of data (``record``, one module
per language in ``records``, found by ``registry``), tokens and sentences in any script
(``text``), the records' rules (``rules``), and which tag values a message states about the
user themself (``attribution``).
"""
