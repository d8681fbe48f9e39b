"""LLM providers behind one `Model` protocol (base.py); LiteLLM lives only in litellm_model.py."""
