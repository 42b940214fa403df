# Sourced by the GPU run scripts: what they set up alike.
#   use_torch_cudnn          the cudnn backend loads cuDNN 9 at run time: where no copy is named
#                            (NVDET_CUDNN_LIBRARY_PATH), PyTorch's wheel's, if it is installed
#   check_settings WHAT WORDS  every word NAME=VALUE (settings for nvdet's environment), else one
#                            sentence naming WHAT and the word, and exit 2
use_torch_cudnn() {
  [[ -n ${NVDET_CUDNN_LIBRARY_PATH:-} ]] && return 0
  NVDET_CUDNN_LIBRARY_PATH=$(python3 -c 'import nvidia.cudnn, os
print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null) && export NVDET_CUDNN_LIBRARY_PATH
  return 0
}
check_settings() {
  local what=$1 kv
  for kv in $2; do
    [[ $kv == [A-Z_]*=* ]] || { echo "$0: '$kv' in $what is not NAME=VALUE" >&2; exit 2; }
  done
}
