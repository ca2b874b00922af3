"""The paper's own numbers (Tables 1-7) as data, and the audit that recomputes its derived numbers."""
