"""Dense retrieval (optional extra `dense`): encoders and the embedding store beside an index.

Nothing here imports torch, sentence-transformers or hnswlib until it is used.
"""
