# Sourced by the GPU run scripts that record one line per step: step NAME COMMAND... runs COMMAND
# with a timeout (NVDET_STEP_TIMEOUT, default 420 s), keeps its output in $out/NAME.txt, the
# command in $out/commands.log and "NAME exit RC SECONDS s" in $out/summary.txt. The caller sets
# $out, and $step_width for the name column (default 28).
step() {
  local name=$1
  shift
  echo "\$ $*" >>"$out/commands.log"
  local t0=$SECONDS
  timeout "${NVDET_STEP_TIMEOUT:-420}" "$@" >"$out/$name.txt" 2>&1
  printf "%-${step_width:-28}s exit %3d  %4d s\n" "$name" "$?" "$((SECONDS - t0))" \
    >>"$out/summary.txt"
}
