"""The January check: payroll rule parameters against the knowledge base's figures.

- ``mapping``: ``wissensbasis/parameters.yaml`` (parameter code → entry, fact label, unit),
  read with line numbers and checked against the entries;
- ``facts``: where a mapped fact stands in an entry (a table row or column, a list label) and
  its value per year, read with the engine's one markdown parser (``kb.markdown``);
- ``check``: a parameter list (code, value, valid from) compared with those values for a date.
"""
