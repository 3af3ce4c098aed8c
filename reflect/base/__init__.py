"""Values and rules that need nothing of the project (records, text, the
environment's settings, the store's location, limits, the credit and supersession rules)."""
