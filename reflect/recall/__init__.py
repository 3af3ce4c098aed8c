"""What the agent reads: the block (``block``), the prediction of what this run will hit
(``predict``), taught and imported lessons (``taught``) and the text (``render``).

Kept free of imports: capture imports ``Predictor`` through ``Memory`` and must not pay
for numpy or the index."""
