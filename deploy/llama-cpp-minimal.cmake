# Included at llama.cpp's project() when deploy/local-model.sh builds llama-cpp-python: llama.cpp's
# "common" library serves only its own tools, not the Python package, and llama-cpp-python forces it on.
# Without it (and without the multimodal library, tools, tests and examples) the build has 83 steps
# instead of 193.
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama.cpp: build common utils library" FORCE)
