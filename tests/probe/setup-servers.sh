#!/usr/bin/env bash
# Builds the two real servers nvdet probe's tests run on 127.0.0.1, and the tiny model they serve,
# into one folder (the first argument, else $NVDET_PROBE_SERVERS, else
# ~/.cache/nvdet/probe-servers). Cached and idempotent: a step whose output is there, made from
# the same pinned versions, is skipped, so CI pays for it once per cache.
#
#   venv/                 Python venv: torch (the CPU-only wheel when its index answers, else
#                         PyPI's), transformers[serving] (`transformers serve`), sentencepiece,
#                         protobuf, and the gguf package of the llama.cpp sources below
#   bin/llama-server      llama.cpp's server, CPU only, built from the llama.cpp sources that
#                         PyPI's llama-cpp-python source package ships (vendor/llama.cpp)
#   tiny-llama/           a random-weight Llama of 2.5M parameters (hidden 256, 4 layers) and a
#                         SentencePiece tokenizer, made here by make_tiny_llama.py (nothing
#                         downloaded)
#   tiny-llama-f16.gguf   that model converted by llama.cpp's own convert_hf_to_gguf.py
#   ready                 written last, with the versions: the tests use the folder only then
#
# NVDET_PROBE_SETUP_JOBS (default 2) compiler jobs, run under nice. Any failure exits non-zero
# and leaves no `ready`: the server tests then skip, saying why.
set -euo pipefail
llama_cpp_python=0.3.36
torch=2.11.0
transformers=5.17.0
dest="${1:-${NVDET_PROBE_SERVERS:-$HOME/.cache/nvdet/probe-servers}}"
here=$(cd "$(dirname "$0")" && pwd)
jobs="${NVDET_PROBE_SETUP_JOBS:-2}"
start=$SECONDS
mkdir -p "$dest/logs"
dest=$(cd "$dest" && pwd)
step() { echo "== probe servers: $1 ($((SECONDS - start)) s so far)"; }
# Runs a step's command with its output in a log, printing the log's end when it fails.
logged() {
  local log="$dest/logs/$1.log"
  shift
  if ! "$@" >"$log" 2>&1; then
    echo "probe servers: '$*' failed; the end of $log:" >&2
    tail -n 30 "$log" >&2
    return 1
  fi
}
# A step is done when its stamp holds the same text (the versions it was made from).
done_with() { [[ -f "$1" && "$(cat "$1")" == "$2" ]]; }

rm -f "$dest/ready"
py="$dest/venv/bin/python"

venv_stamp="torch=$torch transformers=$transformers"
if ! done_with "$dest/venv/.nvdet-stamp" "$venv_stamp"; then
  step "Python venv (torch $torch, transformers $transformers)"
  rm -rf "$dest/venv"
  logged venv python3 -m venv "$dest/venv"
  logged pip-upgrade "$py" -m pip install -q --upgrade pip
  # The CPU-only wheel is a tenth of the size of PyPI's (which brings CUDA's libraries).
  if ! timeout 600 "$py" -m pip install -q --retries 0 --timeout 15 --index-url \
    https://download.pytorch.org/whl/cpu "torch==$torch" >"$dest/logs/torch-cpu.log" 2>&1; then
    echo "probe servers: the CPU-only torch index did not answer; installing PyPI's torch"
    logged torch "$py" -m pip install -q "torch==$torch"
  fi
  logged transformers "$py" -m pip install -q "transformers[serving]==$transformers" \
    sentencepiece protobuf requests
  echo "$venv_stamp" >"$dest/venv/.nvdet-stamp"
fi

src="$dest/src/llama_cpp_python-$llama_cpp_python"
if [[ ! -f "$src/vendor/llama.cpp/CMakeLists.txt" ]]; then
  step "llama-cpp-python $llama_cpp_python source package"
  rm -rf "$dest/src" && mkdir -p "$dest/src"
  logged sdist "$py" -m pip download -q --no-deps --no-binary :all: -d "$dest/src" \
    "llama-cpp-python==$llama_cpp_python"
  tar -xzf "$dest/src/llama_cpp_python-$llama_cpp_python.tar.gz" -C "$dest/src"
  rm "$dest/src/llama_cpp_python-$llama_cpp_python.tar.gz"
fi
llama="$src/vendor/llama.cpp"

server_stamp="llama-cpp-python=$llama_cpp_python"
if ! done_with "$dest/bin/.llama-server-stamp" "$server_stamp"; then
  step "llama-server (CPU, $jobs jobs)"
  rm -rf "$dest/llama-build"
  # CPU only, static, nothing fetched at configure time (no web UI, no HTTPS, no downloads).
  logged llama-configure cmake -S "$llama" -B "$dest/llama-build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_CCACHE=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF
  logged llama-build nice -n 10 cmake --build "$dest/llama-build" -j "$jobs" --target llama-server
  mkdir -p "$dest/bin"
  cp "$dest/llama-build/bin/llama-server" "$dest/bin/llama-server"
  rm -rf "$dest/llama-build"
  echo "$server_stamp" >"$dest/bin/.llama-server-stamp"
fi

if ! done_with "$dest/venv/.gguf-stamp" "$server_stamp"; then
  step "gguf (llama.cpp's converter package)"
  logged gguf "$py" -m pip install -q "$llama/gguf-py"
  echo "$server_stamp" >"$dest/venv/.gguf-stamp"
fi

model_stamp="$(sha256sum "$here/make_tiny_llama.py" | cut -c1-16) $venv_stamp $server_stamp"
if ! done_with "$dest/.model-stamp" "$model_stamp"; then
  step "tiny random Llama and its f16 GGUF"
  rm -rf "$dest/tiny-llama" "$dest/tiny-llama-f16.gguf"
  logged model nice -n 10 "$py" "$here/make_tiny_llama.py" "$dest/tiny-llama"
  (cd "$llama" && logged gguf-convert nice -n 10 "$py" convert_hf_to_gguf.py "$dest/tiny-llama" \
    --outfile "$dest/tiny-llama-f16.gguf" --outtype f16)
  echo "$model_stamp" >"$dest/.model-stamp"
fi

printf 'llama-cpp-python %s\ntorch %s\ntransformers %s\n' "$llama_cpp_python" "$torch" \
  "$transformers" >"$dest/ready"
step "ready in $dest"
