"""The paper's own numbers (Tables 1-7) as data, and the audit that recomputes its derived numbers.

* :mod:`medibio.paper.tables` - Tables 1-7 transcribed (``data/table<n>.csv``), tidy or in printed layout;
* :mod:`medibio.paper.claims` - every numeric statement of the text, with a recipe to recompute it;
* :mod:`medibio.paper.audit` - ``run_audit()``: one row per recomputed number (``medibio audit``);
* :mod:`medibio.paper.sources` - the paper's numbers for other models against their own publications, and
  its comparisons redone with the published figures (``medibio audit --sources``).
"""
