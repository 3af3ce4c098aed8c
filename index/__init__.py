"""Embeddings and vector search, installed as ``reflect.index``.

General on purpose: it knows nothing of failures or lessons. Vectors are
little-endian float32 (``np.frombuffer(blob, "<f4")``).
"""
