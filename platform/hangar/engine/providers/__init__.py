"""LLM providers behind one `Model` protocol (base.py); LiteLLM lives only in litellm_model.py (the adapter) and litellm_transport.py (its import and HTTP client)."""
