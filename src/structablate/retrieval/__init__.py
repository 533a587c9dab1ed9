"""Retrieval: flat exact / HNSW search, two-stage routing, reranking."""
